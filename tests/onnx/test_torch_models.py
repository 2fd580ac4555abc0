"""Real graphs written by ``torch.onnx.export`` run in Ember as in PyTorch (within 1e-4 abs + 1e-4 rel).

A ResNet-18-shaped classifier and a YOLOv5s-shaped detector (the PNNX tests' models, small widths), a
``nn.TransformerEncoder`` and an ``nn.LSTM``; exported by the TorchScript exporter (``dynamo=False``,
fast) with a dynamic batch, and the ResNet once more by the dynamo exporter (opset 18+, needs onnxscript).
"""

from __future__ import annotations

import importlib.util
import io
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
import ember.onnx as eo

torch = pytest.importorskip("torch")


def _shared() -> Any:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "workloads" / "_pnnx_models.py"
    spec = importlib.util.spec_from_file_location("_pnnx_models", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


class _LSTM(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)
        self.head = torch.nn.Linear(32, 3)

    def forward(self, x):
        y, (h, _c) = self.lstm(x)
        return self.head(y[:, -1]), h


def _models() -> dict[str, tuple[Any, Any]]:
    torch.manual_seed(0)
    shared = _shared()
    m = shared.models()
    return {
        "resnet": (shared.randomise_bn(m["ResNet"](widths=(8, 16, 16, 32), blocks=1, classes=10)),
                   torch.randn(2, 3, 32, 32)),
        "yolo": (shared.randomise_bn(m["YOLO"](w=8, n=1, nc=3)), torch.rand(2, 3, 64, 64)),
        "encoder": (_Encoder(), torch.randn(2, 7, 32)),
        "lstm": (_LSTM(), torch.randn(2, 5, 8)),
    }  # fmt: skip


def _export(model: Any, x: Any, n_out: int, dynamo: bool = False) -> bytes:
    f = io.BytesIO()
    names = [f"out{i}" for i in range(n_out)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            pytest.importorskip("onnxscript")
            prog = torch.onnx.export(model, (x,), dynamo=True, input_names=["x"], output_names=names, verbose=False)
            return prog.model_proto.SerializeToString()  # type: ignore[union-attr]
        axes = {"x": {0: "batch"}, **{n: {0: "batch"} for n in names}}
        torch.onnx.export(model, (x,), f, dynamo=False, input_names=["x"], output_names=names, dynamic_axes=axes)
    return f.getvalue()


@pytest.fixture(scope="module")
def exported() -> dict[str, Any]:
    out = {}
    for name, (model, x) in _models().items():
        model.eval()
        with torch.no_grad():
            ref = model(x)
        n_out = len(ref) if isinstance(ref, tuple) else 1
        out[name] = (model, x, _export(model, x, n_out))
    return out


def _compare(model: Any, data: bytes, x: Any) -> None:
    with torch.no_grad():
        ref = model(x)
    refs = ref if isinstance(ref, tuple) else (ref,)
    m = eo.load(data)
    with ember.no_grad():
        got = m(ember.tensor(x.numpy()))
    gots = got if isinstance(got, tuple) else (got,)
    assert len(gots) == len(refs)
    for g, r in zip(gots, refs):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["resnet", "yolo", "encoder", "lstm"])
def test_torch_export_runs_like_torch(exported, name):
    model, x, data = exported[name]
    _compare(model, data, x)
    if name != "encoder":  # the batch size stays free (torch's encoder export fixes it in a Reshape)
        _compare(model, data, torch.cat([x, x[:1] * 0.5]))


def test_dynamo_export_runs_like_torch(exported):
    model, x, _ = exported["resnet"]
    _compare(model, _export(model, x, 1, dynamo=True), x)


def test_imported_torch_model_fine_tunes(exported):
    model, x, data = exported["resnet"]
    m = eo.load(data)
    assert "fc.weight" in m.state_dict()  # torch's parameter names (the exporter folds batch norms into convs)
    np.testing.assert_array_equal(m.state_dict()["fc.weight"].numpy(), model.fc.weight.detach().numpy())
    m.train()
    xe = ember.tensor(x.numpy())
    opt = ember.optim.SGD(m.parameters(), lr=0.05)
    first = None
    for _ in range(3):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(m(xe), ember.tensor([1, 2]))
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < first
