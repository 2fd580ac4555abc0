"""``ember.save`` / ``ember.load``: nested objects, checkpoints, PyTorch files, map_location, bad files."""

import io
import os
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember.record import RecordError


def _checkpoint():
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4), ember.nn.Linear(4, 2))
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):
        loss = model(ember.randn(5, 3)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model, opt


def test_save_load_nested_objects_keeps_types_and_name(tmp_path):
    w = ember.randn(2, 3, requires_grad=True)
    obj = {
        "w": w,
        "same": w,  # shared: saved once, loaded as one object
        "ints": ember.tensor([1, 2, 3], dtype=ember.int16),
        "list": [1, 2.5, "three", None, True, (4, ember.zeros(1))],
        "nested": OrderedDict(b=1, a={"x": np.arange(3.0)}),
        7: "int key",
        "a.b": ember.ones(2),
        "a": {"b": ember.zeros(2)},  # a colliding dotted path
        "inf": float("inf"),
        "np_scalar": np.float32(1.5),
    }
    path = tmp_path / "ckpt.tar"
    assert ember.save(obj, path) is None
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.tar"]  # exactly the name given
    out = ember.load(path)
    assert list(out) == list(obj)
    assert out["w"].tolist() == w.tolist() and out["w"].requires_grad and out["w"].is_leaf
    assert out["same"] is out["w"]
    assert out["ints"].dtype == ember.int16 and out["ints"].tolist() == [1, 2, 3]
    assert out["list"][:5] == [1, 2.5, "three", None, True] and isinstance(out["list"][5], tuple)
    assert isinstance(out["nested"], OrderedDict) and list(out["nested"]) == ["b", "a"]
    assert isinstance(out["nested"]["a"]["x"], np.ndarray) and out["nested"]["a"]["x"].tolist() == [0.0, 1.0, 2.0]
    assert out[7] == "int key" and out["a.b"].tolist() == [1.0, 1.0] and out["a"]["b"].tolist() == [0.0, 0.0]
    assert out["inf"] == float("inf") and out["np_scalar"] == 1.5
    assert ember.load(path.as_posix())["ints"].tolist() == [1, 2, 3]  # str paths too


def test_checkpoint_roundtrip_resumes_exactly(tmp_path):
    model, opt = _checkpoint()
    ember.save({"epoch": 3, "model": model.state_dict(), "optimizer": opt.state_dict()}, tmp_path / "c.pt")
    ck = ember.load(tmp_path / "c.pt", map_location="cpu")
    model2 = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4), ember.nn.Linear(4, 2))
    model2.load_state_dict(ck["model"])
    opt2 = ember.optim.Adam(model2.parameters(), lr=0.01)
    opt2.load_state_dict(ck["optimizer"])
    assert ck["epoch"] == 3 and isinstance(ck["model"], OrderedDict)
    x = ember.randn(5, 3)
    for m, o in ((model, opt), (model2, opt2)):
        loss = m(x).pow(2).mean()
        o.zero_grad()
        loss.backward()
        o.step()
    for a, b in zip(model.parameters(), model2.parameters(), strict=True):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_params_keep_ids_and_file_objects_work():
    p = ember.nn.Param(ember.ones(2))
    buf = io.BytesIO()
    ember.save([p, ember.nn.Buffer(ember.zeros(1))], buf)
    buf.seek(0)
    q, b = ember.load(buf)
    assert isinstance(q, ember.nn.Param) and q.id == p.id and q.requires_grad
    assert b.is_buffer and not b.requires_grad


def test_map_location_forms(tmp_path):
    path = tmp_path / "t.pt"
    ember.save({"x": ember.ones(2, device="cpu")}, path)  # saved from the CPU (make test-cuda's default is cuda)
    seen = []

    def fn(t, loc):
        seen.append(loc)
        return t * 2

    assert ember.load(path, map_location=fn)["x"].tolist() == [2.0, 2.0] and seen == ["cpu"]
    assert ember.load(path, map_location=lambda storage, loc: storage)["x"].tolist() == [1.0, 1.0]
    assert ember.load(path, map_location={"cuda:0": "cpu"})["x"].device == ember.device("cpu")
    assert ember.load(path, map_location=ember.device("cpu"))["x"].device.type == "cpu"
    assert ember.load(path, weights_only=True)["x"].tolist() == [1.0, 1.0]


def test_unpicklable_objects_are_refused_and_nothing_is_written(tmp_path):
    with pytest.raises(TypeError, match="cannot pickle"):
        ember.save({"f": lambda x: x}, tmp_path / "f.pt")
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_corrupt_and_truncated_files_are_refused_clearly(tmp_path):
    path = tmp_path / "c.pt"
    ember.save({"w": ember.randn(100), "n": 1}, path)
    data = path.read_bytes()
    (tmp_path / "trunc.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(RecordError, match=r"trunc\.pt.*truncated"):
        ember.load(tmp_path / "trunc.pt")
    bad = bytearray(data)
    bad[-200] ^= 0xFF  # inside the array bytes
    (tmp_path / "flip.pt").write_bytes(bytes(bad))
    with pytest.raises(RecordError, match=r"flip\.pt.*truncated or corrupt: item .w. fails its CRC-32 check"):
        ember.load(tmp_path / "flip.pt")
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(RecordError, match=r"empty\.pt.*empty"):
        ember.load(tmp_path / "empty.pt")
    (tmp_path / "text.pt").write_text("hello world, not a checkpoint")
    with pytest.raises(RecordError, match=r"text\.pt.*not an Ember or PyTorch file"):
        ember.load(tmp_path / "text.pt")
    with pytest.raises(FileNotFoundError, match=r"missing\.pt"):
        ember.load(tmp_path / "missing.pt")


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "m.pt"
    ember.save({"a": 1}, path)

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        ember.save({"a": 2}, path)
    monkeypatch.undo()
    assert ember.load(path) == {"a": 1} and [p.name for p in tmp_path.iterdir()] == ["m.pt"]


def test_load_reads_ember_records_as_flat_state_dicts(tmp_path):
    m = ember.nn.Linear(2, 3)
    p = m.save(tmp_path / "m")
    sd = ember.load(p)
    assert list(sd) == ["weight", "bias"] and sd["weight"].tolist() == m.weight.tolist()


def test_torch_written_checkpoints_load_and_ember_files_round_trip_with_torch(torch, tmp_path):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net(torch.randn(5, 3)).sum().backward()
    opt.step()
    ck = {"epoch": 2, "model": net.state_dict(), "optimizer": opt.state_dict(), "losses": [0.5, 0.25]}
    torch.save(ck, tmp_path / "torch.pt")
    out = ember.load(tmp_path / "torch.pt", map_location="cpu")
    assert out["epoch"] == 2 and out["losses"] == [0.5, 0.25]
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(out["model"][k].numpy(), v.numpy())
    mom = out["optimizer"]["state"][0]["momentum_buffer"]
    np.testing.assert_array_equal(mom.numpy(), opt.state_dict()["state"][0]["momentum_buffer"].numpy())
    assert out["optimizer"]["param_groups"][0]["lr"] == 0.1
    em = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
    em.load_state_dict(out["model"])
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    net.eval(), em.eval()
    np.testing.assert_allclose(em(ember.tensor(x)).detach().numpy(), net(torch.tensor(x)).detach().numpy(), 1e-6)


def test_torch_file_without_torch_uses_the_restricted_reader(torch, tmp_path, monkeypatch):
    import sys

    torch.save({"w": torch.arange(4.0), "step": 3, "p": torch.nn.Parameter(torch.ones(2))}, tmp_path / "a.pt")
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    out = ember.load(tmp_path / "a.pt")
    assert out["w"].tolist() == [0.0, 1.0, 2.0, 3.0] and out["step"] == 3 and out["p"].tolist() == [1.0, 1.0]


def test_save_keeps_state_dict_metadata(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A state_dict's ``_metadata`` (module versions, read by ``_load_from_state_dict`` to upgrade old files) comes
    back from ``ember.save``/``load``, at the top level and nested in a checkpoint, as ``torch.save`` keeps it."""
    m = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.BatchNorm1d(2))
    sd = m.state_dict()
    assert sd._metadata["1"] == {"version": 2}
    ember.save({"model": sd, "epoch": 3}, tmp_path / "ck.pt")
    ember.save(sd, tmp_path / "sd.pt")
    for back in (ember.load(tmp_path / "ck.pt")["model"], ember.load(tmp_path / "sd.pt")):
        assert list(back._metadata.items()) == list(sd._metadata.items())
        assert list(back) == list(sd)
