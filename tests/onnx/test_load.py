"""``ember.onnx.load``: a loaded model runs like onnxruntime, trains, saves as a record; bad files are refused."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.onnx as eo

from .conftest import make_model, ort_run


def test_runs_like_onnxruntime_at_any_batch_size(conv_model):
    m = eo.load(conv_model.SerializeToString())
    assert m.input_names == ["x"] and m.output_names == ["y"]
    for n in (1, 3):
        x = np.random.default_rng(n).standard_normal((n, 3, 8, 8)).astype(np.float32)
        (ref,) = ort_run(conv_model, {"x": x})
        np.testing.assert_allclose(m(ember.tensor(x)).detach().numpy(), ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m.run({"x": ember.tensor(x)})["y"].detach().numpy(), ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m(x=ember.tensor(x)).detach().numpy(), ref, rtol=1e-5, atol=1e-6)


def test_initializers_are_params_that_train_and_save(conv_model, tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(conv_model.SerializeToString())
    m = eo.load(path)
    assert list(m.state_dict()) == ["conv.weight", "conv.bias", "fc.weight", "fc.bias"]
    params = list(m.parameters())
    assert len(params) == 4 and all(isinstance(p, ember.nn.Param) and p.requires_grad for p in params)
    x = ember.randn(4, 3, 8, 8)
    before = m(x).detach().numpy()
    opt = ember.optim.SGD(m.parameters(), lr=0.5)
    loss = m(x).pow(2).mean()
    loss.backward()
    assert all(p.grad is not None for p in params)
    opt.step()
    after = m(x).detach().numpy()
    assert not np.allclose(before, after)
    m.save(tmp_path / "tuned.mpk")
    fresh = eo.load(path)
    fresh.load(tmp_path / "tuned.mpk")
    np.testing.assert_array_equal(fresh(x).detach().numpy(), after)


def test_gradients_match_torch(conv_model, torch):
    m = eo.load(conv_model.SerializeToString())
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    m(ember.tensor(x)).sum().backward()
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                             torch.nn.Flatten(), torch.nn.Linear(4, 2))  # fmt: skip
    sd = {k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()}
    tm.load_state_dict({"0.weight": sd["conv.weight"], "0.bias": sd["conv.bias"], "4.weight": sd["fc.weight"],
                        "4.bias": sd["fc.bias"]})  # fmt: skip
    tm(torch.tensor(x)).sum().backward()
    np.testing.assert_allclose(m.conv.weight.grad.numpy(), tm[0].weight.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(m.fc.weight.grad.numpy(), tm[4].weight.grad.numpy(), rtol=1e-4, atol=1e-5)


def _tiny(op_type="Relu", domain="", opset=17, **attrs):
    from onnx import TensorProto, helper

    node = helper.make_node(op_type, ["x"], ["y"], name="the_node", domain=domain, **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])  # fmt: skip
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=imports)


def test_not_onnx_and_truncated_files_are_refused(conv_model, tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is a text file, not a model\n")
    with pytest.raises(eo.OnnxFormatError, match=r"bad.onnx: not an ONNX model"):
        eo.load(bad)
    data = conv_model.SerializeToString()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(eo.OnnxFormatError, match=r"cut.onnx: not an ONNX model, or truncated"):
        eo.load(cut)
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(eo.OnnxFormatError, match="empty file"):
        eo.load(tmp_path / "empty.onnx")
    with pytest.raises(FileNotFoundError, match=r"nowhere\.onnx not found"):
        eo.load(tmp_path / "nowhere.onnx")


def test_unknown_operator_and_opset_are_named_with_their_node():
    with pytest.raises(eo.UnsupportedOperatorError, match=r"node 'the_node': unknown operator 'my.ops:Frobnicate'"):
        eo.load(_tiny("Frobnicate", domain="my.ops").SerializeToString())
    with pytest.raises(eo.UnsupportedOperatorError, match=r"opset 99 of the default domain is not supported"):
        eo.load(_tiny(opset=99).SerializeToString())
    with pytest.raises(NotImplementedError):  # also catchable as PyTorch code does
        eo.load(_tiny("Frobnicate", domain="my.ops").SerializeToString())


def test_missing_external_data_is_named(conv_model, tmp_path):
    import onnx

    weight = onnx.numpy_helper.to_array(conv_model.graph.initializer[0])
    onnx.save_model(conv_model, tmp_path / "ext.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)  # fmt: skip
    m = eo.load(tmp_path / "ext.onnx")  # beside the model: found
    np.testing.assert_array_equal(m.conv.weight.detach().numpy(), weight)
    data = (tmp_path / "weights.bin").read_bytes()
    (tmp_path / "weights.bin").write_bytes(data[:10])
    with pytest.raises(eo.OnnxFormatError, match=r"external data file 'weights.bin' holds 10 bytes; tensor"):
        eo.load(tmp_path / "ext.onnx")
    (tmp_path / "weights.bin").unlink()
    with pytest.raises(eo.OnnxFormatError, match=r"external data file 'weights.bin' of tensor 'conv.weight' not found"):
        eo.load(tmp_path / "ext.onnx")


def test_run_time_shape_mismatch_names_node_and_shapes():
    from onnx import TensorProto, helper

    w = np.ones((4, 5), np.float32)
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "K"])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])], {"w": w})  # fmt: skip
    m = eo.load(model.SerializeToString())
    with pytest.raises(ember._errors.ShapeError, match=r"node 'mm': operator 'mm' \(MatMul\) failed on input shapes "
                                                       r"\[\(2, 3\), \(4, 5\)\]"):  # fmt: skip
        m(ember.zeros(2, 3))
    with pytest.raises(ValueError, match=r"input 'x' has shape \(2,\), the graph declares \(N, K\)"):
        m(ember.zeros(2))
    with pytest.raises(TypeError, match=r"input 'x' has dtype ember.float64, the graph declares ember.float32"):
        m(ember.zeros(2, 4, dtype=ember.float64))
    with pytest.raises(TypeError, match=r"takes 1 input\(s\) \['x'\], got 2"):
        m(ember.zeros(2, 4), ember.zeros(2, 4))


def test_local_functions_are_expanded():
    from onnx import TensorProto, helper

    fn = helper.make_function("my.fns", "AddMul", ["a", "b"], ["c"],
                              [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Mul", ["s", "b"], ["c"])],
                              [helper.make_opsetid("", 17)])  # fmt: skip
    node = helper.make_node("AddMul", ["x", "y"], ["z"], domain="my.fns")
    t = [2, 3]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, t) for n in "xy"],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, t)])  # fmt: skip
    model = helper.make_model(graph, functions=[fn], opset_imports=[helper.make_opsetid("", 17),
                                                                     helper.make_opsetid("my.fns", 1)])  # fmt: skip
    model.ir_version = min(model.ir_version, 9)  # an onnxruntime older than onnx refuses a newer IR version
    x, y = np.ones(t, np.float32), np.full(t, 2, np.float32)
    out = eo.load(model.SerializeToString())(ember.tensor(x), ember.tensor(y))
    np.testing.assert_array_equal(out.detach().numpy(), (x + y) * y)
    np.testing.assert_array_equal(ort_run(model, {"x": x, "y": y})[0], (x + y) * y)


def test_without_the_onnx_package_the_error_says_what_to_install(monkeypatch, conv_model, capsys, tmp_path):
    import sys

    from ember.cli import main

    data = conv_model.SerializeToString()
    (tmp_path / "m.onnx").write_bytes(data)
    monkeypatch.setitem(sys.modules, "onnx", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"pip install 'ember\[onnx\]'"):
        eo.load(data)
    with pytest.raises(ImportError, match=r"pip install 'ember\[onnx\]'"):
        eo.export(ember.nn.Linear(2, 2), ember.randn(1, 2), tmp_path / "l.onnx")
    assert main(["onnx", "info", str(tmp_path / "m.onnx")]) == 1
    assert "pip install 'ember[onnx]'" in capsys.readouterr().err


@pytest.mark.process_default  # moves a model from the process default to torch
def test_function_constants_follow_a_placed_model() -> None:
    """A context-dependent ONNX function (Attention, opset 23) is expanded at the first run: the constants of its
    body must land on the device the model was moved to, not on the process default."""
    pytest.importorskip("torch")
    from onnx import TensorProto, helper

    shape = [1, 2, 3, 4]
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "qkv"]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    graph = helper.make_graph([helper.make_node("Attention", ["q", "k", "v"], ["y"])], "attn", vi, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    dev = ember.backends.get("numpy" if ember.zeros(1)._backend.name == "torch" else "torch", "cpu")  # the other one
    inputs = [ember.randn(*shape, generator=ember.Generator().manual_seed(i)) for i in range(3)]
    want = ember.onnx.load(model.SerializeToString())(*inputs)
    m = ember.onnx.load(model.SerializeToString()).to(dev)
    got = m(*[x.to(dev) for x in inputs])
    on_dev = ember.zeros(1, device=dev)._backend
    assert got._backend is on_dev and on_dev is not inputs[0]._backend
    assert all(b._backend is on_dev for b in m.buffers())
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
