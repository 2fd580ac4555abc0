"""``torch._dynamo._trace_wrapped_higher_order_op``: ``TransformGetItemToIndex``, the one name model code imports.

Inside it, ``t[index]`` with an index made only of tensors (``t[i]`` with a 0-d ``i``, ``t[i, j]``) is advanced
indexing, PyTorch's ``aten.index``: a new tensor, never a view, and no ``.item()`` on the index (so a mask function
run under ``vmap`` can index with the mapped scalars). Other indexes (ints, slices, mixes) are unchanged.
"""

from __future__ import annotations

from types import TracebackType

from ..ops._indexing import TENSOR_INDEX_AS_ADVANCED

__all__ = ["TransformGetItemToIndex"]


class TransformGetItemToIndex:
    """A context in which indexing with tensors only is ``aten.index`` (a copy), as in PyTorch."""

    def __enter__(self) -> TransformGetItemToIndex:
        TENSOR_INDEX_AS_ADVANCED[0] += 1
        return self

    def __exit__(self, typ: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        TENSOR_INDEX_AS_ADVANCED[0] -= 1
