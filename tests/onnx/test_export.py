"""``ember.onnx.export``: Ember models as ONNX files that onnxruntime runs as Ember does, at any batch size."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ember
import ember.models as M
import ember.nn as nn
import ember.onnx as eo

from .conftest import ort_run


def _models():
    ember.manual_seed(0)
    return {
        "mlp": (M.MLPConfig(in_features=8, out_features=3, hidden=(16,)).init(), ember.randn(2, 8)),
        "lenet5": (M.LeNet5Config().init(), ember.randn(2, 1, 28, 28)),
        "resnet18": (M.resnet18(num_classes=10), ember.randn(2, 3, 32, 32)),
        "gpt": (M.GPTConfig(n_layer=2, n_embd=32).init(), ember.randint(0, 256, (2, 12))),
        "transformer_encoder": (nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 2),
                                ember.randn(2, 5, 32)),
    }  # fmt: skip


@pytest.fixture(scope="module")
def exported():
    out = {}
    for name, (model, x) in _models().items():
        f = io.BytesIO()
        proto = eo.export(model, (x,), f, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})  # fmt: skip
        out[name] = (model, x, f.getvalue(), proto)
    return out


@pytest.mark.parametrize("name", ["mlp", "lenet5", "resnet18", "gpt", "transformer_encoder"])
def test_onnxruntime_matches_ember_at_two_batch_sizes(exported, name):
    model, x, data, proto = exported[name]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    model.eval()
    for xx in (x, ember.cat([x, x[:1]], 0)):
        with ember.no_grad():
            ref = model(xx).numpy()
        (got,) = ort_run(data, {"x": xx.numpy()})
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["mlp", "lenet5", "resnet18", "gpt", "transformer_encoder"])
def test_export_then_import_gives_the_same_outputs(exported, name):
    model, x, data, _ = exported[name]
    back = eo.load(data)
    model.eval()
    with ember.no_grad():
        np.testing.assert_allclose(back(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-5)
    names = set(back.state_dict())
    assert {k for k in model.state_dict() if not k.endswith("num_batches_tracked")} <= names


def test_file_passes_the_full_checker_and_is_written_atomically(tmp_path):
    import onnx

    model, x = _models()["lenet5"]
    path = tmp_path / "lenet.onnx"
    eo.export(model, x, path, input_names=["image"], output_names=["logits"], opset_version=17)
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    assert proto.opset_import[0].version == 17
    assert [i.name for i in proto.graph.input] == ["image"] and [o.name for o in proto.graph.output] == ["logits"]
    assert [p.name for p in tmp_path.iterdir()] == ["lenet.onnx"]  # no temporary file left behind
    assert model.training  # the model's mode is restored


def test_training_mode_is_restored_and_output_dims_named(tmp_path):
    model, x = _models()["mlp"]
    model.train()
    proto = eo.export(model, x, tmp_path / "m.onnx", dynamic_axes={"input_0": [0]})
    assert model.training
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "input_0_dim0"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param


def test_an_operator_without_onnx_form_is_named():
    class Odd(nn.Module):
        def forward(self, x):
            return ember.cumprod(x, 1)

    with pytest.raises(eo.ExportError, match="operator CumProd has no ONNX form"):
        eo.export(Odd(), ember.randn(2, 3), io.BytesIO())


def test_a_shape_that_depends_on_a_dynamic_axis_in_two_dims_is_refused():
    class Flat(nn.Module):
        def forward(self, x):
            return x.reshape(x.shape[1], x.shape[0], -1)

    with pytest.raises(eo.ExportError, match=r"Reshape \(2, 3, 4\) -> \(3, 2, 4\)"):
        eo.export(Flat(), ember.randn(2, 3, 4), io.BytesIO(), input_names=["x"], dynamic_axes={"x": [0, 1]})
