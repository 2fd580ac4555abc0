"""PyTorch-compatibility surface (issue 15): the same code under ember and torch, results compared."""

import copy
import pickle
import warnings

import numpy as np
import pytest

import ember

# -- view_as, stride, __format__ ---------------------------------------------------------------------


def _shapes_and_strides(lib):
    x = lib.arange(24.0).reshape(2, 3, 4)
    out = {
        "view_as": x.view_as(lib.zeros(6, 4)).tolist(),
        "stride": x.stride(),
        "stride1": x.stride(1),
        "stride_t": x.transpose(0, 2).stride(),
        "stride_slice": x[:, 1:, ::2].stride(),
        "stride_expand": lib.zeros(3, 1).expand(3, 5).stride(),
    }
    with pytest.raises(RuntimeError):
        x.transpose(0, 1).view_as(lib.zeros(6, 4))
    return out


def test_view_as_and_stride_match_torch(torch):
    assert _shapes_and_strides(ember) == _shapes_and_strides(torch)


def test_view_as_backward_and_shares_storage():
    x = ember.arange(6.0, requires_grad=True)
    y = x.view_as(ember.zeros(2, 3))
    (y * ember.arange(6.0).reshape(2, 3)).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    z = ember.zeros(6)
    z.view_as(ember.zeros(3, 2))[0, 0] = 5.0
    assert z[0].item() == 5.0


def _formats(lib):
    loss = lib.tensor(0.123456)
    out = [f"{loss:.4f}", f"{loss}", f"{lib.tensor(3):>5}", format(lib.tensor(2.5), "e")]
    with pytest.raises(TypeError):
        f"{lib.tensor([1.5]):.2f}"
    return out


def test_format_matches_torch(torch):
    assert _formats(ember) == _formats(torch)
    assert f"{ember.tensor([1.5])}" == str(ember.tensor([1.5]))  # an empty spec is str()


# -- legacy constructors -------------------------------------------------------------------------------


def _legacy(lib):
    a, b = lib.Tensor(2, 3), lib.FloatTensor(4)
    out = [tuple(a.shape), str(a.dtype), tuple(b.shape), tuple(lib.Tensor().shape)]
    out.append(lib.Tensor([1, 2]).tolist())
    out.append(str(lib.Tensor([1, 2]).dtype))
    out += [str(lib.LongTensor([1, 2]).dtype), lib.LongTensor([1, 2]).tolist(), str(lib.DoubleTensor(2).dtype)]
    out += [str(lib.IntTensor([3]).dtype), str(lib.BoolTensor([1, 0]).dtype), str(lib.ByteTensor([7]).dtype)]
    out += [str(lib.HalfTensor(1).dtype), str(lib.ShortTensor(1).dtype), str(lib.CharTensor(1).dtype)]
    x = lib.zeros(2, dtype=lib.float64)
    out += [isinstance(lib.zeros(2), lib.FloatTensor), isinstance(lib.zeros(2), lib.LongTensor)]
    out += [isinstance(lib.zeros(2, dtype=lib.int64), lib.LongTensor), isinstance(x, lib.DoubleTensor)]
    out += [tuple(x.new(3, 2).shape), str(x.new(3).dtype), x.new([1, 2]).tolist(), str(x.new([1, 2]).dtype)]
    out += [tuple(x.new().shape), x.new_zeros(2).tolist(), x.new_ones((1, 2)).tolist(), x.new_full((2,), 3).tolist()]
    out += [tuple(x.new_empty(4).shape), x.new_tensor([5]).tolist(), str(x.new_tensor([5]).dtype)]
    out += [x.type().split(".")[-1], str(x.type(lib.FloatTensor).dtype)]
    return [
        s.replace("torch.", "").replace("ember.", "").replace("ember.", "") if isinstance(s, str) else s for s in out
    ]


def test_legacy_constructors_match_torch(torch):
    with ember.device("cpu"):  # torch's tensors here are on the CPU (make test-cuda's default device is cuda)
        ours = _legacy(ember)
    assert ours == _legacy(torch)


def test_legacy_constructor_errors():
    with pytest.raises(ValueError, match="negative"):
        ember.FloatTensor(-1)
    with pytest.raises(TypeError, match="FloatTensor"):
        ember.FloatTensor([1.0], [2.0])
    assert ember.tensor([1, 2]).dtype == ember.int64  # ember.tensor still infers
    assert ember.Tensor(np.arange(3)).dtype == ember.int64  # arrays keep their dtype (documented difference)


# -- deepcopy and pickle -------------------------------------------------------------------------------


def _deepcopy(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    y = copy.deepcopy(x)
    y.data.mul_(10) if hasattr(y.data, "mul_") else None
    out = [x.tolist(), y.requires_grad, y.is_leaf, y.grad.tolist()]
    y.grad.add_(1.0)
    out.append(x.grad.tolist())  # the grad was copied too
    with pytest.raises(RuntimeError):
        copy.deepcopy(x * 2)  # a non-leaf
    return out


def test_deepcopy_tensor_matches_torch(torch):
    assert _deepcopy(ember) == _deepcopy(torch)


def test_deepcopy_module_is_independent_with_tied_weights_and_new_ids():
    emb = ember.nn.Embedding(5, 3)
    model = ember.nn.Sequential(emb, ember.nn.Linear(3, 5))
    model[1].weight = emb.weight  # tied
    model[0].weight.grad = ember.ones(5, 3)
    ema = copy.deepcopy(model)
    assert ema[1].weight is ema[0].weight  # ties survive one deepcopy
    assert ema[0].weight.id != model[0].weight.id  # a copy is a new parameter
    assert ema[0].weight.grad.tolist() == model[0].weight.grad.tolist()
    with ember.no_grad():
        ema[0].weight.mul_(0.0)
    assert model[0].weight.abs().sum().item() > 0
    assert ema.state_dict().keys() == model.state_dict().keys()
    opt = ember.optim.Adam(list(model.parameters()) + list(ema.parameters()), lr=0.1)
    assert len({p.id for g in opt.param_groups for p in g["params"]}) == 4  # no id collisions


def test_pickle_tensor_param_and_module_roundtrip():
    x = ember.randn(3, 4).requires_grad_()
    x.grad = ember.ones(3, 4)
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == x.tolist() and y.requires_grad and y.grad is None  # as torch: no grad
    assert pickle.loads(pickle.dumps(x.detach().t())).tolist() == x.detach().t().tolist()
    m = ember.nn.Sequential(ember.nn.Conv2d(1, 2, 3), ember.nn.BatchNorm2d(2))
    m2 = pickle.loads(pickle.dumps(m))
    assert [p.id for p in m2.parameters()] == [p.id for p in m.parameters()]  # the same parameters elsewhere
    assert m2[1].running_var.is_buffer and not m2[1].running_var.requires_grad
    xb = ember.randn(2, 1, 5, 5)
    np.testing.assert_array_equal(m2(xb).detach().numpy(), m(xb).detach().numpy())
    i = pickle.loads(pickle.dumps(ember.tensor([1, 2], dtype=ember.int16)))
    assert i.dtype == ember.int16 and i.tolist() == [1, 2]


def test_pickled_tensor_keeps_its_backend(torch):
    # torch-CPU beside NumPy's CPU (a GPU machine's cuda beside the host): a pickle names the backend with the device
    dev = ember.backends.get("torch", "cpu").device
    x = ember.randn(3, device=dev, requires_grad=True)
    m = ember.nn.Linear(2, 3).to(dev)
    for t in (x, x.detach(), pickle.loads(pickle.dumps(m)).weight):
        y = pickle.loads(pickle.dumps(t))
        assert y.device.backend == "torch" and y.tolist() == t.tolist() and y.requires_grad == t.requires_grad
    _, args = x.__reduce_ex__(2)
    elsewhere = ember._copy._rebuild_tensor(*args[:-1], "no-such-backend")  # not here: the device's backend
    assert elsewhere.device == "cpu" and elsewhere.device.backend == ember.backends.get_backend("cpu").name
    assert elsewhere.tolist() == x.tolist()


def test_pickled_tensor_matches_torch_semantics(torch):
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = pickle.loads(pickle.dumps(x))
        assert y.requires_grad and y.is_leaf and y.tolist() == [1.0, 2.0]


# -- Dropout2d on other ranks --------------------------------------------------------------------------


def _dropout2d(lib, shape, p=0.5):
    lib.manual_seed(0)
    x = lib.ones(*shape)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = lib.nn.Dropout2d(p)(x)
    zero = (y == 0).numpy()
    kept = y[~(y == 0)]
    return zero, sorted({round(v, 5) for v in kept.tolist()}), len(w)


@pytest.mark.parametrize("shape", [(6, 40), (4, 5, 30), (2, 3, 4, 5)])
def test_dropout2d_ranks_behave_as_torch(torch, shape):
    ez, ekept, ewarn = _dropout2d(ember, shape)
    tz, tkept, twarn = _dropout2d(torch, shape)
    assert ekept == tkept == [2.0] and ewarn == twarn
    # the mask's structure matches (random draws differ): what is constant along which dims
    for z in (ez, tz):
        if len(shape) >= 3:
            assert (z == z[..., :1] if len(shape) == 3 else z == z[:, :, :1, :1]).all()
    if len(shape) == 2:  # single elements, as plain dropout
        assert not (ez == ez[:, :1]).all()


def test_dropout2d_eval_is_identity_with_warning():
    layer = ember.nn.Dropout2d(0.5).eval()
    with pytest.warns(UserWarning, match="dropout2d"):
        y = layer(ember.ones(3, 4))
    assert y.tolist() == ember.ones(3, 4).tolist()


# -- module paths, threads ---------------------------------------------------------------------------------


def test_module_paths_programs_import():
    from ember.nn.modules.batchnorm import _BatchNorm
    from ember.nn.modules.conv import Conv2d, _ConvNd
    from ember.nn.modules.loss import _Loss, _WeightedLoss
    from ember.nn.modules.module import Module
    from ember.nn.modules.utils import _pair
    from ember.utils.data.dataloader import default_collate
    from ember.utils.data.dataset import Subset
    from ember.utils.data.distributed import DistributedSampler
    from ember.utils.data.sampler import Sampler

    from ember.nn.modules import Linear
    from ember.utils.data import DataLoader, Dataset, TensorDataset, random_split

    assert Linear is ember.nn.Linear and Module is ember.nn.Module and issubclass(Conv2d, _ConvNd)
    assert isinstance(ember.nn.BatchNorm2d(2), _BatchNorm) and isinstance(ember.nn.MSELoss(), _Loss)
    assert isinstance(ember.nn.CrossEntropyLoss(), _WeightedLoss) and _pair(3) == (3, 3)
    assert DataLoader is ember.data.DataLoader and Dataset is ember.data.Dataset
    for obj in (TensorDataset, random_split, default_collate, Subset, DistributedSampler, Sampler):
        assert getattr(ember.data, obj.__name__) is obj
    assert isinstance(ember.nn.Dropout(), ember.nn.modules.dropout._DropoutNd)


def test_safe_globals_roundtrip():
    ember.serialization.add_safe_globals([np.dtype])
    with ember.serialization.safe_globals([len]):
        assert ember.serialization.get_safe_globals() == [np.dtype, len]
    assert ember.serialization.get_safe_globals() == [np.dtype]
    ember.serialization.clear_safe_globals()
    assert ember.serialization.get_safe_globals() == []


def test_set_num_threads_roundtrip():
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
        threadpoolctl = pytest.importorskip("threadpoolctl")
        blas = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        assert all(n == 1 for n in blas)
    finally:
        ember.set_num_threads(old)
    with pytest.raises(ValueError, match="positive"):
        ember.set_num_threads(0)


def test_module_path_tables_name_what_torch_has_there(torch):
    """Every name ember.nn.modules.<sub> provides is in torch.nn.modules.<sub> too (the table is torch's)."""
    import importlib

    from ember.nn.modules import _SUBMODULES, _lookup

    provided = 0
    for sub, names in _SUBMODULES.items():
        tmod = importlib.import_module(f"torch.nn.modules.{sub}")
        emod = importlib.import_module(f"ember.nn.modules.{sub}")
        for name in names.split():
            if _lookup(name) is not None:
                if name in _SINCE_2_13 and not hasattr(tmod, name) and _torch_older_than((2, 13)):
                    continue  # an older torch than the pinned one
                assert hasattr(tmod, name), f"torch.nn.modules.{sub} has no {name}"
                assert getattr(emod, name) is _lookup(name)
                provided += 1
    assert provided > 80


def test_tensor_dataset_items_are_tensors_as_in_torch(torch):
    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    out = []
    for lib, data in ((ember, ember.data), (torch, torch.utils.data)):
        a, b = data.TensorDataset(lib.tensor(x), lib.tensor(np.arange(3)))[1]
        out.append((isinstance(a, lib.Tensor), tuple(a.shape), tuple(b.shape), str(b.dtype).split(".")[-1], a.tolist()))
    assert out[0] == out[1]


_SINCE_2_13 = {"LinearCrossEntropyLoss"}  # in torch 2.13 (pinned), not in 2.11


def _torch_older_than(version: tuple[int, int]) -> bool:
    import torch

    return tuple(int(p) for p in torch.__version__.split(".")[:2]) < version


# -- inf/NaN without warnings ------------------------------------------------------------------------

_SILENT = """
import warnings
import ember
x = ember.tensor([0.0, 1.0], requires_grad=True)
y = ember.log(x) + ember.tensor([0.0, 1.0]) / 0 + ember.exp(ember.tensor([1000.0, 0.0])) + ember.sqrt(x) * 0
y.sum().backward()
import numpy as np
try:
    np.log(np.zeros(1))
except RuntimeWarning:
    print("OK")
"""


def test_inf_and_nan_results_warn_as_torch_does_not_at_all(tmp_path):
    """log(0), 0/0, overflow: -inf/NaN/inf silently (PyTorch), even under ``-W error``; a user's NumPy still warns."""
    import subprocess
    import sys
    from pathlib import Path

    src = str(Path(ember.__file__).resolve().parents[1])
    prog = tmp_path / "silent.py"
    prog.write_text(_SILENT)
    r = subprocess.run(
        [sys.executable, "-W", "error", str(prog)], env={"PYTHONPATH": src, "EMBER_BACKEND": "numpy"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr
