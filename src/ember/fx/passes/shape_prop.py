"""``ShapeProp``: run a ``GraphModule`` on example inputs and record each node's shape and dtype
(PyTorch's ``torch.fx.passes.shape_prop``)."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..._dtype import contiguous_format
from ..._tensor import Tensor
from ..interpreter import Interpreter
from ..node import Node, map_aggregate

__all__ = ["ShapeProp", "TensorMetadata", "extract_tensor_metadata"]


class TensorMetadata(NamedTuple):
    """What ``ShapeProp`` records of a tensor result (``node.meta['tensor_meta']``)."""

    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: Any
    is_quantized: bool
    qparams: dict[str, Any]


def extract_tensor_metadata(result: Tensor) -> TensorMetadata:
    """The ``TensorMetadata`` of ``result``."""
    memory_format = None
    is_contiguous = getattr(result, "is_contiguous", None)
    if is_contiguous is not None and is_contiguous():
        memory_format = contiguous_format
    return TensorMetadata(result.shape, result.dtype, bool(result.requires_grad), tuple(result.stride()),
                          memory_format, False, {})  # fmt: skip


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*inputs)``: each node's ``meta['tensor_meta']`` (a ``TensorMetadata``, or such
    values nested as the result is) and ``meta['type']``."""

    def run_node(self, n: Node) -> Any:
        """Run the node and record the metadata of its result."""
        result = super().run_node(n)
        found = False

        def meta(obj: Any) -> Any:
            nonlocal found
            if isinstance(obj, Tensor):
                found = True
                return extract_tensor_metadata(obj)
            return obj

        tm = map_aggregate(result, meta)
        if found:
            n.meta["tensor_meta"] = tm
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run the graph on ``args`` (the example inputs), recording metadata; returns the output."""
        return self.run(*args)
