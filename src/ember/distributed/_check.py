"""Cross-rank checks: every rank must make the same collective call with tensors of the same shape and dtype.

torch.distributed does not check this by default: with gloo a size mismatch aborts a process, and two
dtypes of the same byte size reduce into nonsense without a word. Before each collective called through
``ember.distributed``, the ranks exchange a 16-number fingerprint of the call (operation, root, reduction,
dtype, shape) in one small all-gather, and every rank raises the same error naming each rank's call when
they differ. That exchange costs one small collective's latency per call; DDP, ZeRO and SyncBatchNorm
check their shapes once at construction and skip it. Turn it off on every rank with
``EMBER_DISTRIBUTED_CHECKS=0`` or ``set_collective_checks(False)`` (the ranks must agree).
"""

from __future__ import annotations

import os
from typing import Any

from ._interop import torch_modules

__all__ = ["collective_checks_enabled", "set_collective_checks", "validate"]

_ENABLED = [os.environ.get("EMBER_DISTRIBUTED_CHECKS", "1").strip() not in ("0", "false", "off", "no")]
_OPS = (
    "all_reduce",
    "broadcast",
    "reduce",
    "all_gather",
    "all_gather_into_tensor",
    "reduce_scatter_tensor",
    "gather",
    "scatter",
)
_DTYPES = (
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
_REDUCE = ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR")
_N = 16
_DIMS = _N - 6


def set_collective_checks(enabled: bool) -> None:
    """Check (default) or trust that all ranks make matching collective calls; set the same on every rank."""
    _ENABLED[0] = bool(enabled)


def collective_checks_enabled() -> bool:
    return _ENABLED[0]


def _dtype_name(t: Any) -> str:
    return str(t.dtype).removeprefix("torch.")


def _fingerprint(op: str, t: Any, root: int, reduce: str | None) -> list[int]:
    name = _dtype_name(t)
    shape = list(t.shape)
    fp = [
        _OPS.index(op),
        root,
        _REDUCE.index(reduce) if reduce else -1,
        _DTYPES.index(name) if name in _DTYPES else 99,
        len(shape),
        t.numel(),
    ]
    fp += shape[:_DIMS] + [-1] * (_DIMS - min(len(shape), _DIMS))
    return fp


def _describe(row: list[int]) -> str:
    op = _OPS[row[0]] if 0 <= row[0] < len(_OPS) else "?"
    ndim = row[4]
    shape = row[6 : 6 + min(ndim, _DIMS)] + (["..."] if ndim > _DIMS else [])
    dtype = _DTYPES[row[3]] if 0 <= row[3] < len(_DTYPES) else "other"
    args = [f"{dtype}[{', '.join(map(str, shape))}]"]
    if row[1] >= 0:
        args.append(f"{'src' if op in ('broadcast', 'scatter') else 'dst'}={row[1]}")
    if row[2] >= 0:
        args.append(f"op={_REDUCE[row[2]]}")
    return f"{op}({', '.join(args)})"


def validate(op: str, group: Any, t: Any, root: int = -1, reduce: str | None = None) -> None:
    """Raise on every rank when the ranks of ``group`` are not all calling ``op`` on tensors like ``t``."""
    if not _ENABLED[0]:
        return
    torch, tdist = torch_modules()
    world = tdist.get_world_size(group)
    if world == 1:
        return
    dev = t.device if tdist.get_backend(group) == "nccl" else "cpu"
    mine = torch.tensor(_fingerprint(op, t, root, reduce), dtype=torch.int64, device=dev)
    out = torch.empty(world * _N, dtype=torch.int64, device=dev)
    try:
        tdist.all_gather_single(out, mine, group=group)
    except RuntimeError as e:
        from ._group import backend_error

        raise backend_error(op, group, e) from e
    rows = out.view(world, _N).tolist()
    if all(r == rows[0] for r in rows):
        return
    from ._group import DistUsageError

    ranks = tdist.get_process_group_ranks(group) if group is not None else list(range(world))
    calls = "; ".join(f"rank {r}: {_describe(row)}" for r, row in zip(ranks, rows, strict=True))
    raise DistUsageError(
        f"{op}: the ranks made different collective calls ({calls}); every rank of the group "
        "must call the same collective, in the same order, with tensors of the same shape and "
        "dtype"
    )
