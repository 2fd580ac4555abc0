"""Loading values by dotted name into a module's parameters and persistent buffers.

``load_values`` is ``Record.load_into``'s routine (records, files, checkpoints): keys are matched by dotted
name, ``strict`` makes a missing or unexpected key an error listing both, a shape mismatch is an error naming
the key and both shapes, a float/int mismatch is refused, ids are restored. ``store_value`` puts one value
into one parameter (converted to its dtype and device, in place; ``assign`` adopts the array instead) for
both it and ``Module.load_state_dict`` (which walks the module tree itself, as PyTorch's does).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping
from typing import Any

from .._tensor import Tensor
from ..autograd._grad_mode import no_grad

__all__ = ["IncompatibleKeys", "load_values", "store_value"]


class IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """``(missing_keys, unexpected_keys)`` of a load (PyTorch's ``_IncompatibleKeys``, its repr too)."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def load_values(
    module: Any,
    values: Mapping[str, Any],
    source: str,
    strict: bool = True,
    *,
    same_kind: bool = False,
    ids: Mapping[str, str | None] | None = None,
    assign: bool = False,
    owned: bool = False,
) -> IncompatibleKeys:
    """Copy ``values`` into ``module``'s parameters and buffers; errors start with ``source``.

    ``same_kind``: a float value for an integer parameter (or the reverse) is an error. ``ids``: parameter ids
    to restore.
    ``assign``: a parameter adopts the value's array instead of copying it, when the array is ours to give:
    the values are ``owned`` (read from a file), or the value had to be converted (a new array anyway).
    """
    own = dict(module._persistent_state())
    missing = [k for k in own if k not in values]
    unexpected = [k for k in values if k not in own]
    if strict and (missing or unexpected):
        raise KeyError(f"{source}: missing keys {missing}, unexpected keys {unexpected}")
    with no_grad():
        for k, p in own.items():
            if k not in values:
                continue
            v = values[k]
            if tuple(v.shape) != p.shape:
                raise ValueError(f"{source}: {k!r} has shape {tuple(v.shape)} but the module expects {tuple(p.shape)}")
            if same_kind and v.dtype.is_floating_point != p.dtype.is_floating_point:
                raise TypeError(f"{source}: {k!r} holds {v.dtype} but the module's {k!r} is {p.dtype}")
            store_value(p, v, assign, owned)
            if ids and ids.get(k):
                p.id = ids[k]
    return IncompatibleKeys(missing, unexpected)


def store_value(p: Any, v: Tensor, assign: bool = False, owned: bool = False) -> None:
    """Put ``v`` (shape already checked) into parameter ``p`` in place, converted to its dtype and device.

    ``assign``: ``p`` adopts the converted array instead of copying it, when the array is ours to give
    (``owned``, or the conversion made a new one). Call under ``no_grad``.
    """
    t = v.to(device=p.device, dtype=p.dtype)
    if assign and (owned or t is not v):
        p._data = t._data
        p._vc[0] += 1
    else:
        p.copy_(t)
