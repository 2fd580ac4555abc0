"""DDP's gradient averaging: buckets of gradients all-reduced asynchronously while backward still runs.

How the engine's order makes buckets ready. Ember's backward runs nodes by generation, highest first, and
hands a leaf its gradient when the node that consumed it runs, once per consuming edge, calling the leaf's
hooks on each arrival before adding it to ``.grad``. At the end of ``forward`` the reducer walks the graph
from the module's outputs and counts, per parameter, the edges that reach it. Each hook call counts one
arrival; at the last expected one the parameter's gradient is complete (``.grad`` so far plus this
arrival), is copied into its bucket's flat buffer, and when every parameter of a bucket is in, the bucket
is all-reduced with ``async_op=True`` — while the engine goes on with the earlier layers. Buckets hold
parameters in reverse registration order (the order backward produces them) and are launched strictly in
that order, so every rank issues the same collectives in the same order.

The last bucket is launched at the end of the backward pass (``queue_callback``), with a few extra numbers
appended and summed across ranks: gradients that arrived after their bucket was sent (a loss term that uses
parameters outside the module's output) and, per parameter, whether a rank used it. When a late arrival
happened on any rank, every rank reduces the complete gradients once more, so the result is right in every
case; parameters no rank used keep their gradient (``find_unused_parameters=True``) or raise on every rank.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from ...autograd._capture import collective, opaque
from ...autograd._engine import queue_callback
from ...distributed._group import DistUsageError, backend_error
from ...distributed._interop import torch_modules
from ..parameter import Param

__all__ = ["Reducer"]


class _Bucket:
    """Parameters whose gradients travel together in one flat buffer (one dtype and device)."""

    def __init__(self, reducer: Reducer, index: list[int], extra: int) -> None:
        params = [reducer.params[i] for i in index]
        self.index = index
        self.offsets: list[int] = []
        n = 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        self.numel = n
        be = params[0]._backend
        self.backend = be
        self.flat = be.xp.zeros(n + extra, dtype=params[0]._data.dtype)
        self.torch = _as_torch(self.flat, be)
        #: each parameter's gradient as a view of ``flat`` (written during backward, reduced in place)
        self.slots = [
            be.xp.reshape(self.flat[off : off + p.numel()], tuple(p.shape))
            for off, p in zip(self.offsets, params, strict=True)
        ]
        self.work: Any = None
        self.pending = 0
        self.stale = False  # a gradient arrived after its slot was filled: refill before sending


def _as_torch(array: Any, backend: Any) -> Any:
    torch, _ = torch_modules()
    if backend.name == "torch":
        return array
    if backend.name == "numpy":
        return torch.from_numpy(array)
    return torch.from_dlpack(array)


class Reducer:
    """Averages the gradients of ``params`` over ``group`` during backward (see the module docstring)."""

    def __init__(
        self,
        params: Sequence[Param],
        names: Sequence[str],
        group: Any,
        bucket_cap_mb: float,
        find_unused_parameters: bool,
        first_bucket_mb: float = 1.0,
        gradient_as_bucket_view: bool = False,
    ) -> None:
        self.params, self.names, self.group = list(params), list(names), group
        self.find_unused = find_unused_parameters
        self.as_view = gradient_as_bucket_view
        _, tdist = torch_modules()
        self.world = tdist.get_world_size(group)
        self._where = {id(p): i for i, p in enumerate(self.params)}
        self.buckets = self._assign(bucket_cap_mb, first_bucket_mb)
        self._of = [(0, 0)] * len(self.params)  # param -> (bucket, position in it)
        for b, bucket in enumerate(self.buckets):
            for k, i in enumerate(bucket.index):
                self._of[i] = (b, k)
        n = len(self.params)
        self.expected, self.arrived, self.filled = [0] * n, [0] * n, [False] * n
        self.armed = False  # a synchronising forward ran: the next backward reduces
        self.finished = False  # its backward reduced: another backward through it is an error
        self.queued = False
        self.next_launch = 0
        self.late = 0
        #: buckets of the last backward pass that were sent while it still ran (the rest at its end)
        self.sent_during_backward = 0
        self._early = 0
        # the hooks hold the reducer weakly and go away with it (a model may be wrapped again later)
        handles = [p.register_hook(_hook(weakref.ref(self), i)) for i, p in enumerate(self.params)]
        weakref.finalize(self, _remove, handles)

    def _assign(self, cap_mb: float, first_mb: float) -> list[_Bucket]:
        """PyTorch's assignment: reverse order, split by dtype/device, a small first bucket then ``cap_mb``."""
        groups: list[list[int]] = []
        size, cap, key = 0, min(first_mb, cap_mb) * 2**20, None
        for i in reversed(range(len(self.params))):
            p = self.params[i]
            k = (p._backend, p.dtype)
            if groups and k == key and size < cap:
                groups[-1].append(i)
            else:
                if groups:
                    cap = cap_mb * 2**20
                groups.append([i])
                size, key = 0, k
            size += p.numel() * p.dtype.itemsize
        extra = 1 + len(self.params)  # late arrivals, then per parameter "used on this rank"
        return [_Bucket(self, g, extra if b == len(groups) - 1 else 0) for b, g in enumerate(groups)]

    # -- forward ----------------------------------------------------------------------------------------
    def prepare(self, outputs: list[Any]) -> None:
        """After a synchronising forward: count the edges from ``outputs`` to each parameter."""
        if self.armed and any(self.arrived):
            raise RuntimeError(
                "DistributedDataParallel: the previous backward pass stopped before it finished averaging "
                "gradients (it raised?); the ranks are out of step — restart the group"
            )
        where, counts = self._where, [0] * len(self.params)
        seen: set[int] = set()
        stack = []
        for t in outputs:
            c = t._creator
            if c is not None:
                stack.append(c)
            elif id(t) in where and t.requires_grad:
                counts[where[id(t)]] += 1
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            for e in node._edges or ():
                if e is None:
                    continue
                if e.__class__ is tuple:
                    c, leaf = e
                    if c is None:
                        i = where.get(id(leaf))
                        if i is not None and leaf.requires_grad:
                            counts[i] += 1
                        continue
                    stack.append(c)
                else:
                    stack.append(e)
        self._arm(counts)

    @opaque
    def _arm(self, counts: list[int]) -> None:
        """Expect ``counts[i]`` more gradients for parameter ``i`` (a host step of a captured step)."""
        if not self.armed:
            self._reset()
        self.armed, self.finished = True, False
        for i, c in enumerate(counts):
            if c:
                self.expected[i] += c

    def _capture_writes(self, name: str) -> tuple[list[Param], bool]:
        """What host step ``name`` writes of a captured step: an arrival and the end of backward the gradients
        (``gradient_as_bucket_view``: a ``.grad`` is a view of its bucket); the others the reducer's state only."""
        return (self.params, False) if name in ("_take", "_finish") else ([], False)

    def _reset(self) -> None:
        n = len(self.params)
        self.expected, self.arrived, self.filled = [0] * n, [0] * n, [False] * n
        for b in self.buckets:
            b.pending = len(b.index)
            b.work, b.stale = None, False
        self.next_launch, self.late, self.queued = 0, 0, False

    @opaque
    def forward_without_sync(self) -> None:
        """A forward under ``no_sync()``: its backward accumulates locally (and may follow a reduced one)."""
        self.finished = False

    # -- backward ---------------------------------------------------------------------------------------
    def arrived_grad(self, i: int, grad: Any) -> None:
        """Parameter ``i`` received one of its gradients (a hook call; see the module docstring)."""
        if not self.armed:
            if self.finished:
                raise RuntimeError(
                    "DistributedDataParallel: a second backward pass through one forward (retain_graph=True?) "
                    "would not be averaged across ranks; run forward again before each backward"
                )
            return  # no_sync(), or a forward without grad sync: gradients accumulate locally
        if grad.requires_grad:
            raise RuntimeError("DistributedDataParallel: backward(create_graph=True) is not supported")
        if not self.queued:
            queue_callback(self._finish)
            self.queued = True
        self._take(i, grad)

    @collective
    def _take(self, i: int, grad: Any) -> None:
        """Count one arrival; copy a complete gradient into its bucket, send the buckets now complete (the
        reducer's calls are host steps of a captured step: replayed as these calls, not as their arrays')."""
        self.arrived[i] += 1
        b, k = self._of[i]
        bucket = self.buckets[b]
        if bucket.work is not None:  # already on its way: the ranks must send everything again
            self.late += 1
            return
        if self.filled[i]:  # a path the count did not see: refill this bucket from .grad at the end
            bucket.stale = True
            return
        if self.arrived[i] == self.expected[i]:
            p = self.params[i]
            s = bucket.slots[k]
            if p.grad is None:  # divided by the world size slot by slot, while the slot is in cache
                s[...] = grad._data
            else:
                s[...] = p.grad._data
                s += grad._data
            s /= self.world
            self.filled[i] = True
            bucket.pending -= 1
            self._launch_ready()

    def _launch_ready(self) -> None:
        last = len(self.buckets) - 1
        while self.next_launch < last:
            b = self.buckets[self.next_launch]
            if b.pending or b.stale:
                return
            self._send(b)
            self._early += 1
            self.next_launch += 1

    def _send(self, b: _Bucket) -> None:
        _, tdist = torch_modules()
        try:
            b.work = tdist.all_reduce(b.torch, group=self.group, async_op=True)
        except RuntimeError as e:
            raise backend_error("all_reduce (DDP gradients)", self.group, e) from e

    def _fill_from_grads(self, b: _Bucket, only_unfilled: bool) -> None:
        for k, i in enumerate(b.index):
            if only_unfilled and self.filled[i] and not b.stale:
                continue
            p = self.params[i]
            s = b.slots[k]
            if p.grad is None:
                s[...] = 0
            else:
                s[...] = p.grad._data
                s /= self.world
            self.filled[i] = True

    @collective
    def _finish(self) -> None:
        """End of the backward pass: send what is left, wait for everything, write averages into ``.grad``."""
        self.armed, self.queued = False, False
        self.sent_during_backward, self._early = self._early, 0
        last = self.buckets[-1]
        for b in self.buckets[self.next_launch :]:
            self._fill_from_grads(b, only_unfilled=True)
            if b is last:
                tail = last.flat[last.numel :]
                tail[0] = self.late
                for j, arrived in enumerate(self.arrived):
                    tail[1 + j] = 1.0 if arrived else 0.0
            self._send(b)
        self.next_launch = len(self.buckets)
        for b in self.buckets:
            self._wait(b)
        tail = last.flat[last.numel :]
        flags = [float(v) for v in last.backend.to_numpy(tail).tolist()]
        late, used = flags[0], flags[1:]
        if late > 0:  # some rank got a gradient after its bucket was sent: average the complete ones again
            for b in self.buckets:
                self._fill_from_grads(b, only_unfilled=False)
                self._send(b)
                self._wait(b)
        unused = [self.names[j] for j, u in enumerate(used) if u == 0]
        if unused and not self.find_unused:
            self._reset()
            self.finished = True
            raise DistUsageError(
                f"DistributedDataParallel: parameters {unused} were not used to compute the loss on any rank; pass "
                "find_unused_parameters=True (their gradients then stay as they are), or remove them from the model"
            )
        for b in self.buckets:
            for k, i in enumerate(b.index):
                if used[i] == 0:
                    continue
                p = self.params[i]
                s = b.slots[k]
                if self.as_view:  # ``.grad`` becomes the bucket's view: no copy back
                    if p.grad is None or p.grad._data is not s:
                        p.grad = _new_tensor(s, b.backend)
                    else:
                        p.grad._vc[0] += 1
                elif p.grad is None:
                    p.grad = _new_tensor(b.backend.xp.copy(s), b.backend)
                else:
                    p.grad._data[...] = s
                    p.grad._vc[0] += 1
        self._reset()
        self.finished = True

    def _wait(self, b: _Bucket) -> None:
        if b.work is None:
            return
        try:
            b.work.wait()
        except RuntimeError as e:
            raise backend_error("all_reduce (DDP gradients)", self.group, e) from e
        b.work = None


def _hook(ref: Any, i: int) -> Any:
    def hook(grad: Any) -> None:
        reducer = ref()
        if reducer is not None:
            reducer.arrived_grad(i, grad)

    return hook


def _remove(handles: list[Any]) -> None:
    for h in handles:
        h.remove()


def _new_tensor(array: Any, backend: Any) -> Any:
    from ..._tensor import Tensor

    return Tensor._make(array, backend)
