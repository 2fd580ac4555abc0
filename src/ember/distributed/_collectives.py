"""Collectives on Ember tensors: torch.distributed's calls, on the Ember tensors' own memory.

Each function checks its arguments where it can (ranks, shapes of lists, dtypes, devices), checks across
ranks that everyone makes the same call (``_check.py``), then calls torch.distributed on a zero-copy torch
view of the tensors (``_interop.py``). A tensor written by a collective gets its version bumped; with
``async_op=True`` the returned :class:`Work`'s ``wait()`` finishes the call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._tensor import Tensor
from ..autograd._capture import distributed_call
from ._check import collective_checks_mode, failed, validate
from ._group import DistUsageError, ReduceOp, backend_error, group_backend, reduce_op, require, torch_reduce_op
from ._interop import Borrowed, borrow, gather_single, scatter_single

__all__ = [
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_gather_single",
    "all_reduce",
    "broadcast",
    "broadcast_object_list",
    "gather",
    "irecv",
    "isend",
    "recv",
    "reduce",
    "reduce_scatter_single",
    "reduce_scatter_tensor",
    "scatter",
    "send",
]


class Work:
    """A collective started with ``async_op=True``; ``wait()`` blocks until it is done and its results are in place."""

    def __init__(
        self,
        op: str,
        group: Any,
        work: Any,
        outputs: Sequence[Borrowed],
        then: Callable[[], Any] | None = None,
        checked: bool = True,
    ) -> None:
        self._op, self._group, self._work, self._outputs, self._then = op, group, work, outputs, then
        self._checked = checked
        self._done = False
        self._value: Any = None

    def wait(self, timeout: Any = None) -> bool:
        if not self._done:
            try:
                self._work.wait() if timeout is None else self._work.wait(timeout)
            except RuntimeError as e:
                failed(self._group)
                note = "" if self._checked or collective_checks_mode() != "new" else _UNCHECKED
                raise backend_error(self._op, self._group, e, note) from e
            for b in self._outputs:
                b.written()
            self._value = self._then() if self._then is not None else None
            self._done = True
        return True

    def is_completed(self) -> bool:
        """Whether the communication finished (``wait()`` still has to be called to use the results)."""
        return self._done or bool(self._work.is_completed())

    def result(self) -> list[Tensor]:
        """The tensors this collective wrote (after ``wait()``)."""
        self.wait()
        return [b.tensor for b in self._outputs]

    def __repr__(self) -> str:
        return f"Work({self._op}, {'done' if self._done else 'pending'})"


_UNCHECKED = (
    "; this call repeated the group's earlier calls, so it was not checked across ranks: a rank that made a "
    "different call names it in its own error"
)


def _launch(
    op: str,
    group: Any,
    async_op: bool,
    call: Callable[[bool], Any],
    outputs: Sequence[Borrowed],
    then: Callable[[], Any] | None = None,
    checked: bool = True,
) -> Any:
    try:
        work = call(async_op)
    except RuntimeError as e:
        failed(group)
        note = "" if checked or collective_checks_mode() != "new" else _UNCHECKED
        raise backend_error(op, group, e, note) from e
    if async_op:
        for b in outputs:  # the memory changes from now on: values saved for backward must notice
            b.tensor._vc[0] += 1
        return Work(op, group, work, outputs, then, checked)
    for b in outputs:
        b.written()
    return then() if then is not None else None


def _ranks(tdist: Any, group: Any) -> list[int]:
    if group is None:
        return list(range(tdist.get_world_size()))
    return list(tdist.get_process_group_ranks(group))


def _check_rank(op: str, arg: str, rank: Any, tdist: Any, group: Any) -> int:
    ranks = _ranks(tdist, group)
    if not isinstance(rank, int) or isinstance(rank, bool) or rank not in ranks:
        where = f"the world of size {len(ranks)} (ranks 0..{len(ranks) - 1})" if group is None else f"group {ranks}"
        raise DistUsageError(f"{op}: {arg}={rank!r} is not a rank of {where}")
    return rank


def _check_devices(op: str, tdist: Any, group: Any, tensors: Sequence[Tensor]) -> None:
    if group_backend(tdist, group) == "nccl":
        for t in tensors:
            if t.device.type != "cuda":
                raise DistUsageError(
                    f"{op}: the NCCL backend needs CUDA tensors, got a tensor on {t.device}; move it "
                    "with .cuda() or use backend='gloo' (or 'cpu:gloo,cuda:nccl') for CPU tensors"
                )


def _check_like(op: str, arg: str, ts: Sequence[Any], like: Tensor, n: int | None = None) -> None:
    if n is not None and len(ts) != n:
        raise DistUsageError(f"{op}: {arg} must hold one tensor per rank ({n}), got {len(ts)}")
    for i, t in enumerate(ts):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {arg}[{i}] must be an ember.Tensor, got {type(t).__name__}")
        if t.shape != like.shape or t.dtype != like.dtype:
            raise DistUsageError(
                f"{op}: {arg}[{i}] is {t.dtype}{list(t.shape)} but the tensor is "
                f"{like.dtype}{list(like.shape)}; they must match"
            )


@distributed_call
def all_reduce(tensor: Tensor, op: Any = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Any:
    """Reduce ``tensor`` across the ranks of ``group``, in place on every rank."""
    tdist = require("all_reduce")
    rop = reduce_op(op, "all_reduce")
    b = borrow(tensor, "all_reduce", writable=True)
    _check_devices("all_reduce", tdist, group, [tensor])
    if rop is ReduceOp.AVG and not tensor.dtype.is_floating_point:
        raise DistUsageError(
            f"all_reduce: ReduceOp.AVG needs a floating-point tensor, got {tensor.dtype}; use SUM and divide"
        )
    checked = validate("all_reduce", group, b.torch, reduce=rop.value)
    if async_op:
        return _launch(
            "all_reduce",
            group,
            True,
            lambda a: tdist.all_reduce(b.torch, op=torch_reduce_op(rop), group=group, async_op=True),
            [b],
            checked=checked,
        )
    try:  # the common call, without _launch's generality (this path is timed against torch.distributed's)
        _all_reduce_now(tdist, b.torch, rop, group)
    except RuntimeError as e:
        failed(group)
        raise backend_error(
            "all_reduce", group, e, "" if checked or collective_checks_mode() != "new" else _UNCHECKED
        ) from e
    b.written()
    return None


_ALL_REDUCE_OPTIONS: dict[ReduceOp, Any] = {}


def _all_reduce_now(tdist: Any, t: Any, rop: ReduceOp, group: Any) -> None:
    """``tdist.all_reduce(t, op, group)``; on the default group, the process group's own ``allreduce``.

    That is the call torch.distributed's Python ``all_reduce`` makes after its argument handling (and the
    one PyTorch's C++ DDP makes). Skipping that layer saves about 15 us of Python per call, which is as much
    as the rest of Ember's wrapper: the tensor is already checked here, and the cases it handles otherwise
    (complex tensors, a coalescing context, other groups) go through it.
    """
    pg = tdist.group.WORLD
    if group is not None or t.is_complex() or pg in tdist.distributed_c10d._world.pg_coalesce_state:
        tdist.all_reduce(t, torch_reduce_op(rop), group)
        return
    opts = _ALL_REDUCE_OPTIONS.get(rop)
    if opts is None:
        opts = _ALL_REDUCE_OPTIONS[rop] = tdist.AllreduceOptions()
        opts.reduceOp = torch_reduce_op(rop)
        opts.asyncOp = False
    work = pg.allreduce([t], opts)
    if work is not None:  # a backend that finished the call in C++ returns no Work (NCCL in torch 2.11)
        work.wait()


@distributed_call
def broadcast(tensor: Tensor, src: int = 0, group: Any = None, async_op: bool = False) -> Any:
    """Copy ``tensor`` from rank ``src`` into ``tensor`` on every other rank."""
    tdist = require("broadcast")
    _check_rank("broadcast", "src", src, tdist, group)
    b = borrow(tensor, "broadcast", writable=tdist.get_rank() != src)
    _check_devices("broadcast", tdist, group, [tensor])
    checked = validate("broadcast", group, b.torch, root=src)
    outs = [b] if tdist.get_rank() != src else []
    return _launch(
        "broadcast",
        group,
        async_op,
        lambda a: tdist.broadcast(b.torch, src, group=group, async_op=a),
        outs,
        checked=checked,
    )


@distributed_call
def reduce(tensor: Tensor, dst: int = 0, op: Any = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Any:
    """Reduce ``tensor`` across ranks into ``tensor`` on rank ``dst`` (others' tensors may be overwritten)."""
    tdist = require("reduce")
    _check_rank("reduce", "dst", dst, tdist, group)
    rop = reduce_op(op, "reduce")
    b = borrow(tensor, "reduce", writable=True)
    _check_devices("reduce", tdist, group, [tensor])
    checked = validate("reduce", group, b.torch, root=dst, reduce=rop.value)
    return _launch(
        "reduce",
        group,
        async_op,
        lambda a: tdist.reduce(b.torch, dst, op=torch_reduce_op(rop), group=group, async_op=a),
        [b],
        checked=checked,
    )


@distributed_call
def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: Any = None, async_op: bool = False) -> Any:
    """Every rank's ``tensor`` into ``tensor_list[rank]``, on every rank."""
    tdist = require("all_gather")
    _check_like("all_gather", "tensor_list", tensor_list, tensor, tdist.get_world_size(group))
    src = borrow(tensor, "all_gather")
    outs = [borrow(t, "all_gather", "tensor_list", writable=True) for t in tensor_list]
    _check_devices("all_gather", tdist, group, [tensor, *tensor_list])
    checked = validate("all_gather", group, src.torch)
    return _launch(
        "all_gather",
        group,
        async_op,
        lambda a: tdist.all_gather([o.torch for o in outs], src.torch, group=group, async_op=a),
        outs,
        checked=checked,
    )


@distributed_call
def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: Any = None, async_op: bool = False
) -> Any:
    """Every rank's ``input_tensor`` concatenated along dim 0 (or stacked) into ``output_tensor``.

    torch 2.13 calls it ``all_gather_single``; both names are here (and both work with an older torch).
    """
    tdist = require("all_gather_into_tensor")
    world = tdist.get_world_size(group)
    if output_tensor.numel() != world * input_tensor.numel() or output_tensor.dtype != input_tensor.dtype:
        raise DistUsageError(
            f"all_gather_into_tensor: the output ({output_tensor.dtype}{list(output_tensor.shape)}) "
            f"must hold world_size={world} inputs ({input_tensor.dtype}{list(input_tensor.shape)})"
        )
    src = borrow(input_tensor, "all_gather_into_tensor", "input_tensor")
    out = borrow(output_tensor, "all_gather_into_tensor", "output_tensor", writable=True)
    _check_devices("all_gather_into_tensor", tdist, group, [input_tensor, output_tensor])
    checked = validate("all_gather_into_tensor", group, src.torch)
    return _launch(
        "all_gather_into_tensor",
        group,
        async_op,
        lambda a: gather_single(tdist)(out.torch, src.torch, group=group, async_op=a),
        [out],
        checked=checked,
    )


@distributed_call
def reduce_scatter_tensor(
    output: Tensor, input: Tensor, op: Any = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Any:
    """Reduce ``input`` across ranks and give rank ``r`` the ``r``-th of ``world_size`` equal chunks.

    torch 2.13 calls it ``reduce_scatter_single``; both names are here (and both work with an older torch).
    """
    tdist = require("reduce_scatter_tensor")
    world = tdist.get_world_size(group)
    rop = reduce_op(op, "reduce_scatter_tensor")
    if input.numel() != world * output.numel() or output.dtype != input.dtype:
        raise DistUsageError(
            f"reduce_scatter_tensor: the input ({input.dtype}{list(input.shape)}) must hold "
            f"world_size={world} outputs ({output.dtype}{list(output.shape)})"
        )
    src = borrow(input, "reduce_scatter_tensor", "input")
    out = borrow(output, "reduce_scatter_tensor", "output", writable=True)
    _check_devices("reduce_scatter_tensor", tdist, group, [input, output])
    checked = validate("reduce_scatter_tensor", group, src.torch, reduce=rop.value)
    return _launch(
        "reduce_scatter_tensor",
        group,
        async_op,
        lambda a: scatter_single(tdist)(out.torch, src.torch, op=torch_reduce_op(rop), group=group, async_op=a),
        [out],
        checked=checked,
    )


all_gather_single = all_gather_into_tensor
reduce_scatter_single = reduce_scatter_tensor


@distributed_call
def gather(
    tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int = 0, group: Any = None, async_op: bool = False
) -> Any:
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (other ranks pass no list)."""
    tdist = require("gather")
    _check_rank("gather", "dst", dst, tdist, group)
    root = tdist.get_rank() == dst
    if root and gather_list is None:
        raise DistUsageError(f"gather: rank {dst} is the destination and must pass gather_list")
    if not root and gather_list:
        raise DistUsageError(
            f"gather: only the destination rank {dst} passes gather_list; rank {tdist.get_rank()} passed one"
        )
    src = borrow(tensor, "gather")
    outs = []
    if root:
        assert gather_list is not None
        _check_like("gather", "gather_list", gather_list, tensor, tdist.get_world_size(group))
        outs = [borrow(t, "gather", "gather_list", writable=True) for t in gather_list]
    _check_devices("gather", tdist, group, [tensor, *(gather_list or [])])
    checked = validate("gather", group, src.torch, root=dst)
    glist = [o.torch for o in outs] if root else None
    return _launch(
        "gather",
        group,
        async_op,
        lambda a: tdist.gather(src.torch, glist, dst=dst, group=group, async_op=a),
        outs,
        checked=checked,
    )


@distributed_call
def scatter(
    tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int = 0, group: Any = None, async_op: bool = False
) -> Any:
    """``scatter_list[r]`` from rank ``src`` into ``tensor`` on rank ``r`` (other ranks pass no list)."""
    tdist = require("scatter")
    _check_rank("scatter", "src", src, tdist, group)
    root = tdist.get_rank() == src
    if root and scatter_list is None:
        raise DistUsageError(f"scatter: rank {src} is the source and must pass scatter_list")
    if not root and scatter_list:
        raise DistUsageError(
            f"scatter: only the source rank {src} passes scatter_list; rank {tdist.get_rank()} passed one"
        )
    out = borrow(tensor, "scatter", writable=True)
    ins = []
    if root:
        assert scatter_list is not None
        _check_like("scatter", "scatter_list", scatter_list, tensor, tdist.get_world_size(group))
        ins = [borrow(t, "scatter", "scatter_list") for t in scatter_list]
    _check_devices("scatter", tdist, group, [tensor, *(scatter_list or [])])
    checked = validate("scatter", group, out.torch, root=src)
    slist = [i.torch for i in ins] if root else None
    return _launch(
        "scatter",
        group,
        async_op,
        lambda a: tdist.scatter(out.torch, slist, src=src, group=group, async_op=a),
        [out],
        checked=checked,
    )


def _p2p_check(op: str, arg: str, peer: int, tdist: Any, group: Any) -> None:
    _check_rank(op, arg, peer, tdist, group)
    if peer == tdist.get_rank():
        raise DistUsageError(f"{op}: {arg}={peer} is this rank itself; point-to-point needs another rank")


@distributed_call
def send(tensor: Tensor, dst: int, group: Any = None, tag: int = 0) -> None:
    """Send ``tensor`` to rank ``dst`` (which calls ``recv``); blocks until it is sent."""
    isend(tensor, dst, group, tag).wait()


@distributed_call
def isend(tensor: Tensor, dst: int, group: Any = None, tag: int = 0) -> Work:
    tdist = require("isend")
    _p2p_check("send", "dst", dst, tdist, group)
    b = borrow(tensor, "send")
    _check_devices("send", tdist, group, [tensor])
    return _launch("send", group, True, lambda a: tdist.isend(b.torch, dst, group=group, tag=tag), [])  # type: ignore[no-any-return]


@distributed_call
def recv(tensor: Tensor, src: int | None = None, group: Any = None, tag: int = 0) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); return the sender's rank."""
    tdist = require("recv")
    if src is not None:
        _p2p_check("recv", "src", src, tdist, group)
    b = borrow(tensor, "recv", writable=True)
    _check_devices("recv", tdist, group, [tensor])
    try:
        sender = tdist.recv(b.torch, src, group=group, tag=tag)
    except RuntimeError as e:
        raise backend_error("recv", group, e) from e
    b.written()
    return int(sender)


@distributed_call
def irecv(tensor: Tensor, src: int | None = None, group: Any = None, tag: int = 0) -> Work:
    tdist = require("irecv")
    if src is not None:
        _p2p_check("recv", "src", src, tdist, group)
    b = borrow(tensor, "recv", writable=True)
    _check_devices("recv", tdist, group, [tensor])
    return _launch("recv", group, True, lambda a: tdist.irecv(b.torch, src, group=group, tag=tag), [b])  # type: ignore[no-any-return]


@distributed_call
def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """Every rank's picklable ``obj`` into ``object_list`` (one slot per rank). Pickle: trusted peers only."""
    tdist = require("all_gather_object")
    world = tdist.get_world_size(group)
    if not isinstance(object_list, list) or len(object_list) != world:
        raise DistUsageError(f"all_gather_object: object_list must be a list with one slot per rank ({world})")
    try:
        tdist.all_gather_object(object_list, obj, group=group)
    except RuntimeError as e:
        raise backend_error("all_gather_object", group, e) from e


@distributed_call
def broadcast_object_list(object_list: list[Any], src: int = 0, group: Any = None, device: Any = None) -> None:
    """Rank ``src``'s picklable objects into ``object_list`` on every rank (same length everywhere)."""
    tdist = require("broadcast_object_list")
    _check_rank("broadcast_object_list", "src", src, tdist, group)
    if not isinstance(object_list, list):
        raise DistUsageError(f"broadcast_object_list: object_list must be a list, got {type(object_list).__name__}")
    try:
        tdist.broadcast_object_list(object_list, src, group=group, device=device)
    except RuntimeError as e:
        raise backend_error("broadcast_object_list", group, e) from e
