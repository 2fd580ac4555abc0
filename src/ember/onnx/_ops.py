"""The ONNX op table: operator type (default domain) -> converter, gathered from the family modules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import (
    _ops_control,
    _ops_math,
    _ops_misc,
    _ops_nn,
    _ops_quant,
    _ops_reduce,
    _ops_resize,
    _ops_rnn,
    _ops_shape,
    _ops_vision,
)

__all__ = ["CONTROL", "DOMAIN_OPS", "OPS", "STRUCTURAL", "supported"]

#: operators the graph builder handles itself
STRUCTURAL = ("Constant",)

#: converters ``fn(attrs, *inputs)``
OPS: dict[str, Callable[..., Any]] = {
    **_ops_math.OPS, **_ops_reduce.OPS, **_ops_shape.OPS, **_ops_nn.OPS, **_ops_control.OPS, **_ops_resize.OPS,
    **_ops_rnn.OPS, **_ops_quant.OPS, **_ops_vision.OPS, **_ops_misc.OPS,
}  # fmt: skip

#: converters of the other domains Ember knows: domain -> op type -> converter
DOMAIN_OPS: dict[str, dict[str, Callable[..., Any]]] = {
    "ai.onnx.ml": _ops_misc.ML_OPS, "ai.onnx.preview.training": _ops_misc.TRAINING_OPS,
}  # fmt: skip

#: control flow: ``fn(attrs, outer_values, *inputs)``
CONTROL: dict[str, Callable[..., Any]] = dict(_ops_control.CONTROL)


def supported() -> list[str]:
    """Every default-domain operator type with a converter of its own (others may expand to ONNX functions)."""
    return sorted({*OPS, *CONTROL, *STRUCTURAL, *(f"{d}:{op}" for d, t in DOMAIN_OPS.items() for op in t)})
