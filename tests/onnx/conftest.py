"""Fixtures for ember.onnx: small models made with ``onnx.helper``, onnxruntime as the reference."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx", reason="ember.onnx needs the onnx package: pip install 'ember[onnx]'")

# Ember's operators refuse uint16/32/64 and float8 inputs (as PyTorch's CPU kernels) once such a dtype was made in
# the process; the node cases' outcome must not depend on which test made one first (see node_gaps.py)
import ember
from ember._dtype import FLOAT8_DTYPES, WIDE_UINT_DTYPES
from ember._errors import DTypeError

for _dtype in (*WIDE_UINT_DTYPES, *FLOAT8_DTYPES):
    with contextlib.suppress(DTypeError):  # a backend without the dtype (CuPy: no uint16/32/64, no float8) has none
        ember.zeros(1, dtype=_dtype)


def make_model(nodes: list[Any], inputs: list[Any], outputs: list[Any],
               initializers: dict[str, np.ndarray] | None = None, opset: int = 17, **kw: Any) -> Any:  # fmt: skip
    """A checked ``ModelProto`` from nodes and value infos (``helper.make_tensor_value_info``)."""
    import onnx
    from onnx import helper, numpy_helper

    inits = [numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()]
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kw)
    model.ir_version = min(model.ir_version, 9)
    onnx.checker.check_model(model)
    return model


def ort_run(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's outputs for ``feeds`` (skips the test when onnxruntime is not installed)."""
    ort = pytest.importorskip("onnxruntime")
    data = model if isinstance(model, bytes) else model.SerializeToString()
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


@pytest.fixture
def conv_model() -> Any:
    """Conv(3->4, 3x3, pad 1) -> Relu -> GlobalAveragePool -> Flatten -> Gemm(4->2), batch dim free."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    inits = {
        "conv.weight": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
        "conv.bias": rng.standard_normal(4).astype(np.float32),
        "fc.weight": rng.standard_normal((2, 4)).astype(np.float32),
        "fc.bias": rng.standard_normal(2).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])
    return make_model(nodes, [x], [y], inits)
