"""Inference fusion of Conv [-> BatchNormalization] [-> Add] [-> Relu] (ember.onnx._fuse): same outputs as
onnxruntime, gradients as without fusion, folded weights refreshed when the parameters change."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
import ember.onnx as eo

from .conftest import make_model, ort_run

C = 4


def _block(bn_out: bool = False, extra_reader: bool = False) -> Any:
    """x -> conv1 -> bn1 -> relu -> conv2 -> bn2 -> (+ down: conv3 -> bn3) -> relu: a ResNet block with a
    downsample branch (an Add of two fused chains), BN statistics away from the identity."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    inits: dict[str, np.ndarray] = {}
    nodes = []
    for i, src in ((1, "x"), (2, "r1"), (3, "x")):
        inits[f"w{i}"] = (rng.standard_normal((C, C, 3, 3)) * 0.3).astype(np.float32)
        inits[f"g{i}"] = rng.uniform(0.5, 1.5, C).astype(np.float32)
        inits[f"b{i}"] = rng.uniform(-0.5, 0.5, C).astype(np.float32)
        inits[f"m{i}"] = rng.uniform(-0.5, 0.5, C).astype(np.float32)
        inits[f"v{i}"] = rng.uniform(0.5, 2.0, C).astype(np.float32)
        nodes.append(helper.make_node("Conv", [src, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("BatchNormalization", [f"c{i}", f"g{i}", f"b{i}", f"m{i}", f"v{i}"], [f"n{i}"],
                                      name=f"bn{i}", epsilon=1e-3))  # fmt: skip
    nodes.insert(2, helper.make_node("Relu", ["n1"], ["r1"], name="relu1"))
    nodes += [
        helper.make_node("Add", ["n2", "n3"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["y"], name="relu"),
    ]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", C, 6, 6])]
    if bn_out:
        outs.append(helper.make_tensor_value_info("n1", TensorProto.FLOAT, ["N", C, 6, 6]))
    if extra_reader:
        nodes.append(helper.make_node("Sigmoid", ["c2"], ["z"], name="sig"))
        outs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", C, 6, 6]))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", C, 6, 6])
    return make_model(nodes, [x], outs, inits)


def _fused(m: Any) -> list[list[str]]:
    return sorted(n.meta["fused"] for n in m._graph.runner.nodes if "fused" in n.meta)


def test_chains_are_fused_and_run_like_onnxruntime() -> None:
    model = _block()
    m = eo.load(model.SerializeToString())
    assert _fused(m) == [["conv1", "bn1", "relu1"], ["conv2", "bn2", "add", "relu"], ["conv3", "bn3"]]
    assert len(m._graph.runner.nodes) == 3
    x = np.random.default_rng(1).standard_normal((2, C, 6, 6)).astype(np.float32)
    (ref,) = ort_run(model, {"x": x})
    with ember.no_grad():
        y = m(ember.tensor(x)).numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    y2 = m(ember.tensor(x)).detach().numpy()  # gradients wanted: the nodes run one after the other
    np.testing.assert_allclose(y2, ref, rtol=1e-5, atol=1e-5)


def test_values_read_elsewhere_stop_a_chain() -> None:
    """A graph output (n1) and a value with a second reader (c2) end a chain; the Add then joins the other."""
    model = _block(bn_out=True, extra_reader=True)
    m = eo.load(model.SerializeToString())
    assert _fused(m) == [["conv1", "bn1"], ["conv3", "bn3", "add", "relu"]]
    x = np.random.default_rng(2).standard_normal((1, C, 6, 6)).astype(np.float32)
    refs = ort_run(model, {"x": x})
    with ember.no_grad():
        outs = m(ember.tensor(x))
    for y, ref in zip(outs, refs, strict=True):
        np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_training_gets_every_gradient_and_inference_follows_the_update(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _block()
    m = eo.load(model.SerializeToString())
    monkeypatch.setattr(eo._graph, "fuse", lambda nodes, outputs: list(nodes))
    plain = eo.load(model.SerializeToString())  # the same graph without fusion, as the reference
    assert not _fused(plain)
    x = np.random.default_rng(3).standard_normal((2, C, 6, 6)).astype(np.float32)
    for mod in (m, plain):
        (mod(ember.tensor(x)) ** 2).sum().backward()
    for (name, p), (_, q) in zip(m.named_parameters(), plain.named_parameters(), strict=True):
        assert p.grad is not None, name
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-5, err_msg=name)
    with ember.no_grad():
        before = m(ember.tensor(x)).numpy()
    trained = [p for name, p in m.named_parameters() if not name.startswith("v")]  # variances stay positive
    ember.optim.SGD(trained, lr=0.01).step()  # in place: the cached folded weights must be refreshed
    with ember.no_grad():
        after = m(ember.tensor(x)).numpy()
    assert np.abs(after - before).max() > 1e-3
    (ref,) = ort_run(_with_weights(model, {k: v.numpy() for k, v in m.state_dict().items()}), {"x": x})
    np.testing.assert_allclose(after, ref, rtol=1e-5, atol=1e-5)


def _with_weights(model: Any, weights: dict[str, np.ndarray]) -> Any:
    from onnx import numpy_helper

    new = type(model)()
    new.CopyFrom(model)
    for t in new.graph.initializer:
        t.CopyFrom(numpy_helper.from_array(weights[t.name], t.name))
    return new
