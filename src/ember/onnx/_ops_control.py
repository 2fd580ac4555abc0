"""ONNX control flow (``If``, ``Loop``, ``Scan``, run eagerly), sequences and optionals.

A control-flow converter takes ``(a, outer, *inputs)``: ``outer`` maps the enclosing scopes' value names
its subgraphs read to their values. Sequences are Python lists of Tensors; an empty optional is ``None``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _creation, ops
from .. import _dtype as dt
from .._tensor import Tensor
from ._dtypes import require_dtype
from ._ops_reduce import ints

__all__ = ["CONTROL", "OPS"]


def if_(a: Any, outer: dict[str, Any], cond: Tensor) -> tuple[Any, ...]:
    branch = a["then_branch"] if bool(cond.reshape(-1)[0].item()) else a["else_branch"]
    return tuple(branch.run([], outer, a.device))


def _stack(values: list[Any]) -> Any:
    if not values:
        return _creation.zeros(0)
    if isinstance(values[0], list):
        return values
    return ops.stack(values)


def loop(a: Any, outer: dict[str, Any], trips: Any = None, cond: Any = None, *carried: Any) -> tuple[Any, ...]:
    body = a["body"]
    n = int(trips.item()) if isinstance(trips, Tensor) else None
    keep = bool(cond.item()) if isinstance(cond, Tensor) else True
    state = list(carried)
    scans: list[list[Any]] = []
    i = 0
    dev = a.device
    while keep and (n is None or i < n):
        it = _creation.tensor(i, dtype=dt.int64, device=dev)
        c = _creation.tensor(keep, dtype=dt.bool_, device=dev)
        out = body.run([it, c, *state], outer, dev)
        keep = bool(out[0].item()) if isinstance(out[0], Tensor) else True
        state = list(out[1 : 1 + len(state)])
        rest = out[1 + len(state) :]
        if not scans:
            scans = [[] for _ in rest]
        for acc, v in zip(scans, rest):
            acc.append(v)
        i += 1
    n_scan = len(body.outputs) - 1 - len(carried)
    return (*state, *(_stack(s) for s in (scans or [[] for _ in range(n_scan)])))


def scan(a: Any, outer: dict[str, Any], *inputs: Any) -> tuple[Any, ...]:
    m = a["num_scan_inputs"]
    if a.opset < 9:  # Scan-8: a leading batch axis on every input (and sequence_lens first), scanned per row
        rest = inputs[1:]
        n_state = len(rest) - m
        rows = [_scan(a, outer, [s[b] for s in rest[:n_state]], [x[b] for x in rest[n_state:]], a.get("directions"))
                for b in range(rest[0].shape[0])]  # fmt: skip
        return tuple(ops.stack([r[k] for r in rows]) for k in range(len(rows[0])))
    n_state = len(inputs) - m
    return _scan(a, outer, list(inputs[:n_state]), list(inputs[n_state:]), a.get("scan_input_directions"))


def _scan(a: Any, outer: dict[str, Any], state: list[Any], xs: list[Any], in_dirs: Any) -> tuple[Any, ...]:
    body = a["body"]
    m, n_state = len(xs), len(state)
    in_axes = list(a.get("scan_input_axes") or [0] * m)
    in_dirs = list(in_dirs or [0] * m)
    xs = [x.movedim(ax % x.ndim, 0) for x, ax in zip(xs, in_axes)]
    xs = [ops.flip(x, (0,)) if d else x for x, d in zip(xs, in_dirs)]
    steps = xs[0].shape[0] if xs else 0
    outs: list[list[Tensor]] = []
    for t in range(steps):
        res = body.run([*state, *(x[t] for x in xs)], outer, a.device)
        state = list(res[:n_state])
        if not outs:
            outs = [[] for _ in res[n_state:]]
        for acc, v in zip(outs, res[n_state:]):
            acc.append(v)
    k = len(body.outputs) - n_state
    out_axes = list(a.get("scan_output_axes") or [0] * k)
    out_dirs = list(a.get("scan_output_directions") or [0] * k)
    stacked = []
    for acc, ax, d in zip(outs or [[] for _ in range(k)], out_axes, out_dirs):
        y = ops.stack(acc[::-1] if d else acc)
        stacked.append(y.movedim(0, ax % y.ndim))
    return (*state, *stacked)


# -- sequences and optionals --------------------------------------------------------------------------
def sequence_empty(a: Any) -> list[Tensor]:
    if "dtype" in a:
        require_dtype(a["dtype"], f"{a.name}: SequenceEmpty")
    return []


def sequence_at(a: Any, seq: list[Tensor], pos: Tensor) -> Tensor:
    return seq[int(pos.item())]


def sequence_insert(a: Any, seq: list[Tensor], t: Tensor, pos: Any = None) -> list[Tensor]:
    out = list(seq)
    p = int(pos.item()) if pos is not None else len(out)
    out.insert(p if p >= 0 else p + len(out), t)
    return out


def sequence_erase(a: Any, seq: list[Tensor], pos: Any = None) -> list[Tensor]:
    out = list(seq)
    del out[int(pos.item()) if pos is not None else -1]
    return out


def split_to_sequence(a: Any, x: Tensor, split: Any = None) -> list[Tensor]:
    axis = a.get("axis", 0) % x.ndim
    if split is None:
        parts = list(ops.split(x, 1, axis))
        return [p.squeeze(axis) for p in parts] if a.get("keepdims", 1) == 0 else parts
    sizes = ints(split)
    if split.ndim == 0:
        return list(ops.split(x, sizes[0], axis))
    return list(ops.split(x, sizes, axis))


def concat_from_sequence(a: Any, seq: list[Tensor]) -> Tensor:
    axis = a["axis"]
    return ops.stack(seq, axis) if a.get("new_axis", 0) else ops.cat(seq, axis)


def optional(a: Any, x: Any = None) -> Any:
    return x


def optional_has_element(a: Any, x: Any = None) -> Tensor:
    return _creation.tensor(x is not None, dtype=dt.bool_)


def optional_get_element(a: Any, x: Any) -> Any:
    if x is None:
        raise ValueError("OptionalGetElement: the optional is empty")
    return x


CONTROL: dict[str, Callable[..., Any]] = {"If": if_, "Loop": loop, "Scan": scan}

OPS: dict[str, Callable[..., Any]] = {
    "SequenceEmpty": sequence_empty, "SequenceConstruct": lambda a, *xs: list(xs), "SequenceAt": sequence_at,
    "SequenceInsert": sequence_insert, "SequenceErase": sequence_erase,
    "SequenceLength": lambda a, seq: _creation.tensor(len(seq), dtype=dt.int64),
    "SplitToSequence": split_to_sequence, "ConcatFromSequence": concat_from_sequence, "Optional": optional,
    "OptionalHasElement": optional_has_element, "OptionalGetElement": optional_get_element,
}  # fmt: skip
