"""The one load routine: values by dotted name copied into a module's parameters and persistent buffers.

``Module.load_state_dict`` and ``Record.load_into`` (records, files, checkpoints) both call ``load_values``.
The rules they share: keys are matched by dotted name, ``strict`` makes a missing or unexpected key an error
listing both, a shape mismatch is an error naming the key and both shapes, values are converted to each
parameter's dtype and device and copied in place under ``no_grad``. Where a state dict and a record differ,
the caller says so: a state dict reports every size mismatch at once (as PyTorch does) and converts any number
kind; a record stops at the first mismatch, refuses a float/int mismatch, restores ids, and with ``assign``
adopts its arrays instead of copying them.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping
from typing import Any

from .._tensor import Tensor
from ..autograd._grad_mode import no_grad

__all__ = ["IncompatibleKeys", "load_values"]

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def load_values(
    module: Any,
    values: Mapping[str, Any],
    source: str,
    strict: bool = True,
    *,
    convert: Callable[[Any, str], Tensor] | None = None,
    report_all: bool = False,
    same_kind: bool = False,
    ids: Mapping[str, str | None] | None = None,
    assign: bool = False,
    owned: bool = False,
) -> IncompatibleKeys:
    """Copy ``values`` into ``module``'s parameters and buffers; errors start with ``source``.

    ``convert(value, key)``: the value as a Tensor (state dicts take arrays too). ``report_all``: collect
    every size mismatch into one error (state dicts). ``same_kind``: a float value for an integer parameter
    (or the reverse) is an error (records). ``ids``: parameter ids to restore.
    ``assign``: a parameter adopts the value's array instead of copying it, when the array is ours to give:
    the values are ``owned`` (read from a file), or the value had to be converted (a new array anyway).
    """
    own = dict(module._persistent_state())
    missing = [k for k in own if k not in values]
    unexpected = [k for k in values if k not in own]
    if strict and (missing or unexpected):
        raise KeyError(f"{source}: missing keys {missing}, unexpected keys {unexpected}")
    errors = []
    with no_grad():
        for k, p in own.items():
            if k not in values:
                continue
            v = values[k] if convert is None else convert(values[k], k)
            if tuple(v.shape) != p.shape:
                if report_all:
                    errors.append(f"{k}: checkpoint shape {tuple(v.shape)}, model shape {p.shape}")
                    continue
                raise ValueError(f"{source}: {k!r} has shape {tuple(v.shape)} but the module expects {p.shape}")
            if same_kind and v.dtype.is_floating_point != p.dtype.is_floating_point:
                raise TypeError(f"{source}: {k!r} holds {v.dtype} but the module's {k!r} is {p.dtype}")
            t = v.to(device=p.device, dtype=p.dtype)
            if assign and (owned or t is not v):
                p._data = t._data
                p._vc[0] += 1
            else:
                p.copy_(t)
            if ids and ids.get(k):
                p.id = ids[k]
    if errors:
        raise ValueError(f"{source}: size mismatch for " + "; ".join(errors))
    return IncompatibleKeys(missing, unexpected)
