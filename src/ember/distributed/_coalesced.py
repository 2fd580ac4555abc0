"""Collectives over many tensors at once, for DDP and ZeRO: one flat buffer per dtype instead of one call each.

These are internal: their callers (DistributedDataParallel, ZeroRedundancyOptimizer, SyncBatchNorm) check
once, at construction, that every rank holds the same shapes, so the per-call cross-rank check of the
public collectives is skipped here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor
from ._group import backend_error
from ._interop import borrow, torch_modules

__all__ = ["broadcast_coalesced", "check_same_across_ranks"]

_BUCKET_BYTES = 250 * 1024 * 1024  # what PyTorch's DDP uses to broadcast module states


def _chunks(tensors: Sequence[Tensor], cap: int) -> list[list[Tensor]]:
    """Consecutive runs of tensors with one backend, device and dtype, each at most ``cap`` bytes (or one tensor)."""
    out: list[list[Tensor]] = []
    size = 0
    for t in tensors:
        key = (t._backend, t.dtype)
        nbytes = t.numel() * t.dtype.itemsize
        if out and (out[-1][0]._backend, out[-1][0].dtype) == key and size + nbytes <= cap:
            out[-1].append(t)
            size += nbytes
        else:
            out.append([t])
            size = nbytes
    return out


def broadcast_coalesced(tensors: Sequence[Tensor], src: int, group: Any = None, cap: int = _BUCKET_BYTES) -> None:
    """Copy ``tensors`` from rank ``src`` into the same tensors on every rank, a few flat buffers at a time."""
    _, tdist = torch_modules()
    receive = tdist.get_rank() != src
    for chunk in _chunks([t for t in tensors if t.numel()], cap):
        be = chunk[0]._backend
        xp = be.xp
        if len(chunk) == 1:
            flat = chunk[0]._data
            b = borrow(chunk[0], "broadcast", writable=receive)
        else:
            flat = xp.concatenate([xp.reshape(t._data, (-1,)) for t in chunk])
            b = borrow(Tensor._make(flat, be), "broadcast")
        try:
            tdist.broadcast(b.torch, src, group=group)
        except RuntimeError as e:
            raise backend_error("broadcast (module states)", group, e) from e
        if not receive:
            continue
        if len(chunk) == 1:
            b.written()
            continue
        off = 0
        for t in chunk:
            n = t.numel()
            t._data[...] = xp.reshape(flat[off : off + n], tuple(t.shape))
            t._vc[0] += 1
            off += n


def check_same_across_ranks(what: str, items: list[tuple[str, tuple[int, ...], str]], group: Any = None) -> None:
    """Raise on every rank when the ranks' ``(name, shape, dtype)`` lists differ, naming the first difference."""
    from ._group import DistUsageError

    _, tdist = torch_modules()
    world = tdist.get_world_size(group)
    if world == 1:
        return
    lists: list[Any] = [None] * world
    try:
        tdist.all_gather_object(lists, items, group=group)
    except RuntimeError as e:
        raise backend_error(f"{what} (checking shapes across ranks)", group, e) from e
    ref = lists[0]
    for r, other in enumerate(lists):
        if other == ref:
            continue
        if len(other) != len(ref):
            raise DistUsageError(
                f"{what}: rank 0 has {len(ref)} tensors to synchronise but rank {r} has "
                f"{len(other)}; every rank must build the same model"
            )
        for (n0, s0, d0), (n1, s1, d1) in zip(ref, other, strict=True):
            if (n0, s0, d0) != (n1, s1, d1):
                raise DistUsageError(
                    f"{what}: rank 0 has {n0} as {d0}{list(s0)} but rank {r} has {n1} as "
                    f"{d1}{list(s1)}; every rank must build the same model"
                )
