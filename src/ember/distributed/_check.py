"""Cross-rank checks: every rank must make the same collective call with tensors of the same shape and dtype.

torch.distributed does not check this by default: with gloo a size mismatch kills a process (SIGABRT in
gloo's receive), and two dtypes of the same byte size reduce into nonsense without a word. Ember checks a
call by exchanging a 16-number fingerprint (operation, root, reduction, dtype, shape) in one small
all-gather; every rank then raises the same error naming each rank's call.

Exchanging before every call costs a round trip, as much as the collective itself for a 1 MB buffer on a
busy machine. So by default (mode ``"new"``) a call is exchanged only when it differs from the call this
group's history predicts: every rank remembers, per group, which call followed each call last time (the
history is the same on every rank, since every call either was exchanged and found equal or equalled the
same prediction). A call that equals the prediction goes straight to the collective; when all ranks do
that, they made the same call. A call that differs is exchanged on a second gloo group made for the checks
(``init_process_group``/``new_group`` create it), so it never meets another rank's data:

- all ranks differ from the prediction (a first call, a call site that disagrees across ranks): the exchange
  completes at once and every rank raises the error naming each rank's call (the group stays usable);
- only some do (a rank's call changes while the others repeat theirs): the changed rank waits in the
  exchange and the others in the collective until the group's ``timeout``; then the changed rank raises an
  error naming its call and the predicted one, and the others a ``DistBackendError`` naming the collective.
  No process is killed and no result is wrong; the group is then out of step and refuses checked calls.

``"all"`` (also ``TORCH_DISTRIBUTED_DEBUG=DETAIL``) exchanges every call: every mismatch is reported at once,
at a round trip per call. ``"off"`` exchanges nothing (PyTorch's default). Choose with
``EMBER_DISTRIBUTED_CHECKS=new|all|off`` or ``set_collective_checks``, the same on every rank. Groups made
by torch.distributed directly (no check group) are checked on every call, on the group itself. DDP, ZeRO
and SyncBatchNorm check their shapes once at construction and skip this.
"""

from __future__ import annotations

import os
from typing import Any

from ._interop import gather_single, torch_modules

__all__ = [
    "collective_checks_enabled",
    "failed",
    "register_group",
    "set_collective_checks",
    "unregister_group",
    "validate",
]

_MODES = {"new": "new", "1": "new", "on": "new", "true": "new", "yes": "new", "all": "all", "every": "all"}
_MODES.update({"off": "off", "0": "off", "false": "off", "no": "off"})


def _mode_from_env() -> str:
    value = os.environ.get("EMBER_DISTRIBUTED_CHECKS", "").strip().lower()
    if value:
        return _MODES.get(value, "new")
    return "all" if os.environ.get("TORCH_DISTRIBUTED_DEBUG", "").upper() == "DETAIL" else "new"


_MODE = [_mode_from_env()]
_OPS = {
    op: i
    for i, op in enumerate(
        (
            "all_reduce",
            "broadcast",
            "reduce",
            "all_gather",
            "all_gather_into_tensor",
            "reduce_scatter_tensor",
            "gather",
            "scatter",
        )
    )
}
_OP_NAMES = list(_OPS)
_DTYPES = {
    name: i
    for i, name in enumerate(
        (
            "float32",
            "float64",
            "float16",
            "bfloat16",
            "int64",
            "int32",
            "int16",
            "int8",
            "uint8",
            "bool",
            "complex64",
            "complex128",
        )
    )
}
_DTYPE_NAMES = list(_DTYPES)
_REDUCE = {name: i for i, name in enumerate(("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"))}
_REDUCE_NAMES = list(_REDUCE)
_N = 16
_DIMS = _N - 6


class _History:
    """One group's check group and call history: which call followed which, the same on every rank."""

    __slots__ = ("broken", "last", "next_of", "side")

    def __init__(self, side: Any) -> None:
        self.side = side
        self.last: tuple[Any, ...] | None = None  # (op, dtype, shape, root, reduce) of the last call
        self.next_of: dict[tuple[Any, ...] | None, tuple[Any, ...]] = {}
        self.broken = ""


_GROUPS: dict[Any, _History] = {}  # key: the group object, None for the default group


def register_group(group: Any, side: Any) -> None:
    """``side`` (a gloo group of the same ranks) carries ``group``'s checks; None: the default group."""
    _GROUPS[group] = _History(side)


def unregister_group(group: Any) -> Any:
    """Forget ``group`` (None: every group); return its check group, if any, for the caller to destroy."""
    if group is None:
        _GROUPS.clear()
        return None
    h = _GROUPS.pop(group, None)
    return h.side if h is not None else None


def set_collective_checks(enabled: bool | str) -> None:
    """How collective calls are checked across ranks: ``"new"`` (default; True), ``"all"``, ``"off"`` (False).

    Set the same on every rank (see the module docstring for what each costs and catches).
    """
    if isinstance(enabled, bool):
        _MODE[0] = "new" if enabled else "off"
    elif isinstance(enabled, str) and enabled.strip().lower() in _MODES:
        _MODE[0] = _MODES[enabled.strip().lower()]
    else:
        raise ValueError(f"set_collective_checks: expected True, False, 'new', 'all' or 'off', got {enabled!r}")


def collective_checks_enabled() -> bool:
    return _MODE[0] != "off"


def collective_checks_mode() -> str:
    return _MODE[0]


def _fingerprint(op: str, t: Any, root: int, reduce: str | None) -> tuple[int, ...]:
    shape = tuple(int(d) for d in t.shape)
    nd = len(shape)
    head = (
        _OPS[op],
        root,
        _REDUCE[reduce] if reduce else -1,
        _DTYPES.get(str(t.dtype)[6:], 99),  # "torch.float32"
        nd,
        t.numel(),
    )
    if nd >= _DIMS:
        return head + shape[:_DIMS]
    return head + shape + (-1,) * (_DIMS - nd)


class _Like:
    """Stands in for a tensor of a remembered call (its dtype and shape), to fingerprint that call."""

    def __init__(self, dtype: Any, shape: Any) -> None:
        self.dtype, self.shape = dtype, shape

    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


def _call(key: tuple[Any, ...]) -> tuple[str, Any, int, str | None]:
    op, dtype, shape, root, reduce = key
    return op, _Like(dtype, shape), root, reduce


def _describe(row: tuple[int, ...] | list[int]) -> str:
    op = _OP_NAMES[row[0]] if 0 <= row[0] < len(_OP_NAMES) else "?"
    ndim = row[4]
    shape = list(row[6 : 6 + min(ndim, _DIMS)]) + (["..."] if ndim > _DIMS else [])
    dtype = _DTYPE_NAMES[row[3]] if 0 <= row[3] < len(_DTYPE_NAMES) else "other"
    args = [f"{dtype}[{', '.join(map(str, shape))}]"]
    if row[1] >= 0:
        args.append(f"{'src' if op in ('broadcast', 'scatter') else 'dst'}={row[1]}")
    if row[2] >= 0:
        args.append(f"op={_REDUCE_NAMES[row[2]]}")
    return f"{op}({', '.join(args)})"


_BROKEN = (
    "an earlier collective of this group failed, so its ranks may be out of step; destroy the group "
    "(destroy_process_group) and start again"
)


def failed(group: Any) -> None:
    """A collective of ``group`` failed: its ranks may be out of step, so refuse its later checked calls."""
    h = _history(torch_modules()[1], group)
    if h is not None:
        h.broken = _BROKEN


def _history(tdist: Any, group: Any) -> _History | None:
    h = _GROUPS.get(group)
    if h is None and group is not None and group is tdist.group.WORLD:
        h = _GROUPS.get(None)
    return h


def validate(op: str, group: Any, t: Any, root: int = -1, reduce: str | None = None) -> bool:
    """Check across ``group`` that every rank calls ``op`` on tensors like ``t`` (see the module docstring).

    Raise on every rank that took part in a failed check; return whether this call was checked (False: it
    repeated the predicted call, or checks are off).
    """
    mode = _MODE[0]
    if mode == "off":
        return False
    torch, tdist = torch_modules()
    h = _history(tdist, group)
    key = (op, t.dtype, t.shape, root, reduce)  # cheaper than the fingerprint; equal calls, equal keys
    if h is not None:
        if h.broken:
            from ._group import DistUsageError

            raise DistUsageError(f"{op}: {h.broken}")
        if mode == "new" and key == h.next_of.get(h.last):
            h.last = key
            return False
    elif tdist.get_world_size(group) == 1:
        return False
    fp = _fingerprint(op, t, root, reduce)
    via = group if h is None or h.side is None else h.side
    world = tdist.get_world_size(via)
    if world == 1:
        if h is not None:  # one rank: nothing to compare, and this call is the prediction from now on
            h.next_of[h.last] = key
            h.last = key
        return False
    dev = t.device if h is None and tdist.get_backend(group) == "nccl" else "cpu"
    mine = torch.tensor(fp, dtype=torch.int64, device=dev)
    out = torch.empty(world * _N, dtype=torch.int64, device=dev)
    try:
        gather_single(tdist)(out, mine, group=via)
    except RuntimeError as e:
        from ._group import backend_error

        expected = h.next_of.get(h.last) if h is not None and mode == "new" else None
        note = ""
        if expected is not None:
            predicted = _describe(_fingerprint(*_call(expected)))
            note = (
                f"; this rank called {_describe(fp)} where the group's earlier calls predicted {predicted}, and "
                "the other ranks did not join the cross-rank check: they most likely made the predicted call "
                "(every rank must make the same collective calls in the same order)"
            )
        failed(group)
        raise backend_error(op, group, e, note) from e
    rows = [tuple(r) for r in out.view(world, _N).tolist()]
    if all(r == fp for r in rows):
        if h is not None:
            h.next_of[h.last] = key
            h.last = key
        return True
    from ._group import DistUsageError

    ranks = tdist.get_process_group_ranks(group) if group is not None else list(range(world))
    calls = "; ".join(f"rank {r}: {_describe(row)}" for r, row in zip(ranks, rows, strict=True))
    raise DistUsageError(
        f"{op}: the ranks made different collective calls ({calls}); every rank of the group "
        "must call the same collective, in the same order, with tensors of the same shape and "
        "dtype"
    )
