"""bfloat16 and float16 parameters in records and state dicts on the torch backend (NumPy has no bfloat16)."""

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember import backends
from ember.record import JsonGzRecorder, NamedMpkGzRecorder, NamedMpkRecorder, SafetensorsRecorder, load

torch = pytest.importorskip("torch")
RECORDERS = [NamedMpkRecorder, NamedMpkGzRecorder, JsonGzRecorder]


def bits(t):
    """The raw bits of a tensor (exact comparison, NaN included): bfloat16 as uint16 on any backend."""
    if t.dtype is ember.bfloat16:
        return t._backend.bfloat16_bits(t.detach()._data).tolist()
    a = t.detach()._data
    if not a.is_floating_point():
        return a.tolist()
    return a.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]).tolist()


def half_model(dtype):
    with backends.use("torch"):
        ember.manual_seed(3)
        m = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.Linear(4, 3)).to(dtype)
        m[1](ember.randn(6, 4, dtype=dtype))  # running statistics in the dtype
        with ember.no_grad():  # values a float32 round trip would not survive unchanged in bits: NaN, inf, tiny
            m[0].bias[:3] = ember.tensor([float("inf"), -0.0, 1e-40 if dtype is ember.bfloat16 else 6e-8])
    return m


@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16], ids=str)
@pytest.mark.parametrize("recorder", RECORDERS, ids=lambda r: r.name)
def test_half_parameters_round_trip_exactly_as_is(tmp_path, recorder, dtype):
    a, b = half_model(dtype), half_model(dtype)
    with backends.use("torch"), ember.no_grad():
        for p in b.parameters():
            p.zero_()
    path = recorder().save(a.into_record(), tmp_path / "m", "as_is")
    rec = recorder().load(path, device=a[0].weight.device)
    assert {t.dtype for t in rec.tensors().values() if t.dtype.is_floating_point} == {dtype}
    b.load_record(rec)
    for (k, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert y.dtype is x.dtype and y._backend.name == "torch", k
        assert bits(y) == bits(x), k


@pytest.mark.parametrize("precision", ["full", "double", "bfloat16"])
def test_bfloat16_parameters_saved_wider_or_as_bfloat16_load_exactly(tmp_path, precision):
    a, b = half_model(ember.bfloat16), half_model(ember.bfloat16)
    path = save_path = tmp_path / "m.mpk"
    a.save(save_path, precision=precision)
    b.load(path, device=a[0].weight.device)
    for (k, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert y.dtype is x.dtype and bits(y) == bits(x), k


def test_half_state_dicts_and_optimizer_state_round_trip(tmp_path):
    m = half_model(ember.bfloat16)
    with backends.use("torch"):
        opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        m(ember.randn(2, 5, dtype=ember.bfloat16)).float().sum().backward()
        opt.step()
    h = ember.ones(2, dtype=ember.float16, device=m[0].weight.device)
    state = {"model": m.state_dict(), "opt": opt.state_dict(), "h": h}
    ember.save(state, tmp_path / "ckpt.pt")
    with backends.use("torch"):  # loaded onto the selected backend (NumPy would widen bfloat16 to float32)
        got = ember.load(tmp_path / "ckpt.pt")
    for k, x in m.state_dict().items():
        y = got["model"][k]
        assert y.dtype is x.dtype and y._backend.name == "torch" and bits(y) == bits(x), k
    buf0 = next(iter(opt.state_dict()["state"].values()))["momentum_buffer"]
    buf1 = next(iter(got["opt"]["state"].values()))["momentum_buffer"]
    assert buf1.dtype is ember.bfloat16 and bits(buf1) == bits(buf0)
    assert got["h"].dtype is ember.float16


@pytest.fixture
def on_the_cpu():
    """The default device cpu: these tests are about NumPy on the host (``backends.use("numpy")`` under a CUDA
    default device, as in make test-cuda, would leave cuda to its serving backend)."""
    with ember.device("cpu"):
        yield


@pytest.mark.usefixtures("on_the_cpu")
def test_bfloat16_record_on_numpy_keeps_the_bits(tmp_path):
    a = half_model(ember.bfloat16)
    path = a.save(tmp_path / "m.mpk", precision="as_is")
    rec = load(path, device=backends.get("numpy"))
    w = rec.tensors()["0.weight"]
    assert w._backend.name == "numpy" and w.dtype is ember.bfloat16 and bits(w) == bits(a[0].weight)
    with backends.use("numpy"):
        numpy_model = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.Linear(4, 3))
        numpy_model.load_record(rec)  # float32 parameters take the exact values
        np.testing.assert_array_equal(numpy_model[2].weight.detach().numpy(), a[2].weight.float().detach().numpy())
        m16 = numpy_model.to(ember.bfloat16)
        m16.load_record(rec)
        assert bits(m16[0].weight) == bits(a[0].weight)
        again = load(m16.save(tmp_path / "n.mpk", precision="as_is"), device=backends.get("numpy"))
        assert bits(again.tensors()["0.weight"]) == bits(a[0].weight)


def test_safetensors_keeps_bfloat16_bits_as_BF16_or_float32(tmp_path):
    a = half_model(ember.bfloat16)
    path = SafetensorsRecorder().save(a.into_record(), tmp_path / "b", "as_is")  # BF16 on file
    b = half_model(ember.bfloat16)
    b.load_record(SafetensorsRecorder().load(path))
    assert bits(b[0].weight) == bits(a[0].weight) and bits(b[0].bias) == bits(a[0].bias)
    path = SafetensorsRecorder().save(a.into_record(), tmp_path / "m", "full")  # float32 on file: exact
    b = half_model(ember.bfloat16)
    b.load_record(SafetensorsRecorder().load(path))
    assert bits(b[0].weight) == bits(a[0].weight)


@pytest.mark.usefixtures("on_the_cpu")
def test_torch_saved_bfloat16_loads_as_bfloat16_on_torch_and_numpy(tmp_path):
    w = torch.tensor([1.5, -2.0, float("nan"), 3e-39]).to(torch.bfloat16)
    torch.save({"w": w}, tmp_path / "t.pt")
    with backends.use("torch"):
        got = ember.load(tmp_path / "t.pt")["w"]
    assert got.dtype is ember.bfloat16 and got._data.view(torch.int16).tolist() == w.view(torch.int16).tolist()
    with backends.use("numpy"):
        on_numpy = ember.load(tmp_path / "t.pt")["w"]
    assert on_numpy.dtype is ember.bfloat16 and bits(on_numpy) == w.view(torch.int16).numpy().view(np.uint16).tolist()
