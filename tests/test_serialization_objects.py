"""Whole objects in files under PyTorch >= 2.6's consent rule, tested against PyTorch where it has the same rule.

``save`` pickles any object inside the record; ``load`` unpickles only tensors, plain containers and
safe globals unless ``weights_only=False``; a module PyTorch saved whole comes back as Ember's module.
"""

from __future__ import annotations

import io
import pickle
import sys

import numpy as np
import pytest

import ember
from ember import nn
from ember.record import RecordError
from ember.serialization import WeightsOnlyError


class Holder:  # a user's class (importable: tests/ is on the path as a package-less module)
    def __init__(self, w):
        self.w = w


def test_ember_module_saved_whole_needs_consent_and_comes_back(tmp_path):
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    ember.save(net, tmp_path / "net.pt")
    with pytest.raises(WeightsOnlyError, match=r"ember\.nn\..*Sequential.*weights_only=False"):
        ember.load(tmp_path / "net.pt")
    with pytest.raises(pickle.UnpicklingError):  # what PyTorch code catches (torch raises it)
        ember.load(tmp_path / "net.pt")
    back = ember.load(tmp_path / "net.pt", weights_only=False)
    assert type(back) is nn.Sequential
    # on the saved device: a file names it, not the backend that served it (a cuda module comes back on cuda;
    # torch-CPU, the default device of the fake-device run, on the CPU's backend: moved back to compare bits)
    assert [p.device for p in back.parameters()] == [p.device for p in net.parameters()]
    x = ember.randn(5, 3)
    assert back.to(net[0].weight.device)(x).tolist() == net(x).tolist()
    assert [p.id for p in back.parameters()] == [p.id for p in net.parameters()]


def test_shared_tensors_and_requires_grad_survive_whole_object_files(tmp_path):
    w = ember.randn(3, requires_grad=True)
    h = Holder({"a": w, "b": [w, {1, 2}]})
    ember.save(h, tmp_path / "h.pt")
    with pytest.raises(WeightsOnlyError, match=r"Holder.*weights_only=False"):
        ember.load(tmp_path / "h.pt")
    back = ember.load(tmp_path / "h.pt", weights_only=False)
    assert type(back).__name__ == "Holder" and back.w["a"] is back.w["b"][0] and back.w["a"].requires_grad
    assert back.w["b"][1] == {1, 2}


def test_plain_pickled_containers_and_safe_globals_load_weights_only(tmp_path, torch):
    obj = {"s": {1, 2}, "f": frozenset({3}), "c": 1 + 2j, "t": ember.ones(2)}
    ember.save(obj, tmp_path / "s.pt")
    back = ember.load(tmp_path / "s.pt")
    assert back["s"] == {1, 2} and back["f"] == frozenset({3}) and back["c"] == 1 + 2j and back["t"].tolist() == [1, 1]
    for lib, path in ((ember, tmp_path / "e.pt"), (torch, tmp_path / "t.pt")):  # the same rule in both libraries
        lib.save([len], path)
        with pytest.raises(Exception, match="len"):
            lib.load(path)
        with lib.serialization.safe_globals([len]):
            assert lib.load(path) == [len]
        assert lib.load(path, weights_only=False) == [len]


TORCH_MODULES = {
    "convnet": lambda t: t.nn.Sequential(
        t.nn.Conv2d(1, 2, 3, padding=1), t.nn.BatchNorm2d(2), t.nn.ReLU(), t.nn.MaxPool2d(2), t.nn.Flatten(),
        t.nn.Linear(8, 3), t.nn.GELU(approximate="tanh"), t.nn.LayerNorm(3), t.nn.Dropout(0.1)),
    "attention": lambda t: t.nn.MultiheadAttention(4, 2, batch_first=True),
    "encoder_layer": lambda t: t.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True),
    "lstm": lambda t: t.nn.LSTM(4, 3, num_layers=2, batch_first=True),
    "gru": lambda t: t.nn.GRU(4, 3),
    "embedding": lambda t: t.nn.Embedding(5, 4, padding_idx=0),
}  # fmt: skip
TORCH_INPUTS = {
    "convnet": lambda t: (t.randn(2, 1, 4, 4),),
    "attention": lambda t: (t.randn(2, 3, 4),) * 3,
    "encoder_layer": lambda t: (t.randn(2, 3, 4),),
    "lstm": lambda t: (t.randn(2, 3, 4),),
    "gru": lambda t: (t.randn(3, 2, 4),),
    "embedding": lambda t: (t.tensor([[1, 2, 0]]),),
}


@pytest.mark.parametrize("name", list(TORCH_MODULES))
def test_torch_saved_module_is_refused_then_rebuilt_as_ember(torch, name):
    m = TORCH_MODULES[name](torch).eval()
    buf = io.BytesIO()
    torch.save(m, buf)
    data = buf.getvalue()
    qual = f"{type(m).__module__}.{type(m).__name__}"
    with pytest.raises(WeightsOnlyError, match=rf"{qual}.*weights_only=False"):
        ember.load(io.BytesIO(data))
    with pytest.raises(Exception, match="weights_only"):  # PyTorch refuses the same file the same way
        torch.load(io.BytesIO(data))
    em = ember.load(io.BytesIO(data), weights_only=False).eval()
    assert type(em) is getattr(nn, type(m).__name__)
    assert list(em.state_dict()) == list(m.state_dict())
    xs = TORCH_INPUTS[name](torch)
    dev = next(iter(em.parameters())).device  # where the file put it (the CPU, as torch.load would), not the default
    ref, out = m(*xs), em(*[ember.tensor(x.numpy(), device=dev) for x in xs])
    ref, out = (ref[0], out[0]) if isinstance(ref, tuple) else (ref, out)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_torch_module_of_a_missing_or_torch_class_is_named(torch, tmp_path, monkeypatch):
    mod = type(sys)("usernet")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(2, 2)

    Net.__module__, Net.__qualname__ = mod.__name__, "Net"
    mod.Net = Net
    monkeypatch.setitem(sys.modules, "usernet", mod)
    torch.save(Net(), tmp_path / "net.pt")
    with pytest.raises(RecordError, match=r"usernet\.Net is a PyTorch module here"):
        ember.load(tmp_path / "net.pt", weights_only=False)
    monkeypatch.delitem(sys.modules, "usernet")
    with pytest.raises(RecordError, match=r"needs the class usernet\.Net, which cannot be imported"):
        ember.load(tmp_path / "net.pt", weights_only=False)


def test_corrupt_pickle_in_a_record_is_refused(tmp_path):
    ember.save(Holder(1), tmp_path / "h.pt")
    raw = bytearray((tmp_path / "h.pt").read_bytes())
    i = raw.index(b"pickle")
    raw[i + 20 : i + 24] = b"!!!!"
    (tmp_path / "bad.pt").write_bytes(bytes(raw))
    with pytest.raises(RecordError, match=r"bad\.pt"):
        ember.load(tmp_path / "bad.pt", weights_only=False)
