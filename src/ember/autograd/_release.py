"""Letting go of node inputs whose values backward never reads (PyTorch frees such a buffer as soon as the
program drops it; an Ember node holds its input Tensors, so it would keep the buffer alive until backward).

``Function.apply`` calls :func:`_release_unread` when it records a node whose backward reads no input value
(``saves_inputs = False``: ``a + b``, ``tanh`` reading its output, reductions) or only some (``value_needed``:
``x * w`` reads ``x`` only for ``w``'s gradient), and only for arrays of at least ``RELEASE_MIN_BYTES``. It is
called when the result is that large or is one number (at most 16 bytes: a reduction of a large input, such as
a loss): a small op
pays one size check, and the stand-in costs a few microseconds where it pays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._tensor import Tensor

if TYPE_CHECKING:
    from ._function import Function

__all__: list[str] = []

#: A recorded node lets go of an input's array when its backward never reads that value and the array has at
#: least this many bytes (PyTorch's nodes keep only what their backward needs). A list: tests lower it.
RELEASE_MIN_BYTES = [1 << 16]


def _release_unread(fn: Function, args: tuple[Any, ...]) -> None:
    """Replace ``fn.inputs[i]`` by a stand-in when backward never reads input ``i``'s value (``saves_inputs`` is
    False, or ``value_needed(i)`` says so) and its array is large: a zero-strided array of the same shape and
    dtype, with the input's graph fields, so the graph no longer keeps the array alive (PyTorch frees such a
    buffer as soon as the program drops it). Parameters (``Tensor`` subclasses) are kept: their owner holds them;
    so are bool and integer inputs.
    """
    if fn.saves_inputs and not fn._reads_some:
        return
    limit = RELEASE_MIN_BYTES[0]
    ins = None
    for i, a in enumerate(args):
        if a.__class__ is not Tensor or (a._creator is None and a._requires_grad):  # (the leaf's edge holds it)
            continue
        d, be = a._data, a._backend
        # floating inputs only: an operator may read a bool or integer input (a condition, indices) without
        # counting it as saved, as such inputs carry no gradient
        if d.nbytes >= limit and d.dtype in be.grad_dtypes and not (fn.saves_inputs and fn.value_needed(i)):
            if ins is None:
                ins = list(args)
            xp = be.xp
            t = Tensor._make(xp.broadcast_to(xp.zeros((), dtype=d.dtype), d.shape), be)
            t._requires_grad, t._creator, t._out_idx = a._requires_grad, a._creator, a._out_idx
            ins[i] = t
    if ins is not None:
        fn.inputs = tuple(ins)
