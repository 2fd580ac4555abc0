"""Process groups: ``init_process_group`` and the questions about the group a process belongs to.

Groups are torch.distributed's own (``ProcessGroup`` objects, the same rendezvous: ``env://`` as torchrun
sets it, ``tcp://``, ``file://``, or a ``store``); Ember adds argument checks that name the problem and
errors that name the rank and the operation.
"""

from __future__ import annotations

import datetime
import enum
import os
from typing import Any

from ..autograd._capture import distributed_call
from ._check import register_group, unregister_group
from ._elastic import elastic_attempt_store
from ._interop import DistBackendError, DistError, NotInitializedError, torch_modules

__all__ = [
    "Backend",
    "DistUsageError",
    "ReduceOp",
    "barrier",
    "destroy_process_group",
    "get_backend",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "is_available",
    "is_gloo_available",
    "is_initialized",
    "is_nccl_available",
    "is_torchelastic_launched",
    "monitored_barrier",
    "new_group",
]


class DistUsageError(DistError, ValueError):
    """A distributed call with arguments that cannot work (a rank outside the world, a CPU tensor to NCCL)."""


class ReduceOp(enum.Enum):
    """How a reduction combines the ranks' values (torch.distributed's ``ReduceOp``)."""

    SUM = "SUM"
    AVG = "AVG"
    PRODUCT = "PRODUCT"
    MIN = "MIN"
    MAX = "MAX"
    BAND = "BAND"
    BOR = "BOR"
    BXOR = "BXOR"

    def __repr__(self) -> str:
        return f"ReduceOp.{self.name}"


class Backend:
    """Backend names, as torch.distributed spells them."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    UCC = "ucc"


def reduce_op(op: Any, where: str) -> ReduceOp:
    """``op`` as a ReduceOp: Ember's, torch's, or a name (``"sum"``)."""
    if isinstance(op, ReduceOp):
        return op
    name = getattr(op, "name", op)
    if isinstance(name, str) and name.upper() in ReduceOp.__members__:
        return ReduceOp[name.upper()]
    raise DistUsageError(f"{where}: op must be a ReduceOp ({', '.join(ReduceOp.__members__)}), got {op!r}")


_TORCH_OPS: dict[ReduceOp, Any] = {}


def torch_reduce_op(op: ReduceOp) -> Any:
    t = _TORCH_OPS.get(op)
    if t is None:
        t = _TORCH_OPS[op] = getattr(torch_modules()[1].ReduceOp, op.value)
    return t


_BACKEND_OF: dict[Any, str] = {}


def group_backend(tdist: Any, group: Any) -> str:
    """``tdist.get_backend(group)``, remembered per group object (a collective asks on every call)."""
    key = group if group is not None else tdist.group.WORLD
    name = _BACKEND_OF.get(key)
    if name is None:
        name = _BACKEND_OF[key] = str(tdist.get_backend(group))
    return name


def is_available() -> bool:
    """Whether distributed training can run here (torch with torch.distributed is installed)."""
    try:
        torch_modules()
    except ImportError:
        return False
    return True


def is_gloo_available() -> bool:
    return is_available() and bool(torch_modules()[1].is_gloo_available())


def is_nccl_available() -> bool:
    return is_available() and bool(torch_modules()[1].is_nccl_available())


def backend_status() -> dict[str, str | None]:
    """Each torch.distributed backend: None when usable here, else why not (``ember info`` prints it)."""
    try:
        torch, tdist = torch_modules()
    except ImportError as e:
        return {name: str(e) for name in _BACKENDS}
    out: dict[str, str | None] = {}
    for name in _BACKENDS:
        check = getattr(tdist, f"is_{name}_available", None)
        if check is None or not check():
            out[name] = f"not in this torch build ({torch.__version__})"
        elif name == "nccl" and not torch.cuda.is_available():
            out[name] = "built, but torch sees no CUDA GPU"
        else:
            out[name] = None
    return out


def is_torchelastic_launched() -> bool:
    """Whether this process was started by torchrun (torchelastic)."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_initialized() -> bool:
    """Whether the default process group exists (False without torch)."""
    return is_available() and bool(torch_modules()[1].is_initialized())


def _require(op: str) -> Any:
    _, tdist = torch_modules()
    if not tdist.is_initialized():
        raise NotInitializedError(
            f"{op}: the default process group is not initialised; call "
            "ember.distributed.init_process_group() first (torchrun sets RANK, WORLD_SIZE, "
            "MASTER_ADDR and MASTER_PORT for its env:// rendezvous)"
        )
    return tdist


def _timeout(timeout: Any) -> datetime.timedelta | None:
    if timeout is None or isinstance(timeout, datetime.timedelta):
        return timeout
    if isinstance(timeout, (int, float)) and timeout > 0:
        return datetime.timedelta(seconds=float(timeout))
    raise DistUsageError(f"init_process_group: timeout must be a datetime.timedelta or seconds > 0, got {timeout!r}")


_BACKENDS = ("gloo", "nccl", "mpi", "ucc")


def _check_backend(backend: Any) -> None:
    torch, tdist = torch_modules()
    if backend is None:
        return
    if not isinstance(backend, str):
        raise DistUsageError(f"init_process_group: backend must be a string such as 'gloo' or 'nccl', got {backend!r}")
    names = [b.split(":")[-1].strip().lower() for b in backend.split(",")]
    for name in names:
        if name not in _BACKENDS:
            raise DistUsageError(
                f"init_process_group: unknown backend {name!r}; expected one of {_BACKENDS} (or 'cpu:gloo,cuda:nccl')"
            )
        if not getattr(tdist, f"is_{name}_available")():
            raise DistUsageError(f"init_process_group: this torch build ({torch.__version__}) has no {name!r} backend")
    if names == ["nccl"] and not torch.cuda.is_available():
        raise DistUsageError(
            "init_process_group: backend 'nccl' needs a CUDA GPU per rank and torch sees none; "
            "use backend='gloo' on CPUs"
        )


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: Any = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
) -> None:
    """Join the default process group (torch.distributed's rendezvous; ``env://`` unless told otherwise).

    ``backend=None`` uses NCCL for CUDA tensors and gloo for CPU tensors; ``timeout`` (a timedelta or
    seconds) bounds every collective: a rank that died or hangs makes the others fail within it.
    """
    tdist = torch_modules()[1]
    if tdist.is_initialized():
        raise DistUsageError(
            f"init_process_group: the default process group is already initialised (rank "
            f"{tdist.get_rank()} of {tdist.get_world_size()}, backend {tdist.get_backend()}); "
            "call destroy_process_group() first"
        )
    if world_size != -1 and (not isinstance(world_size, int) or world_size < 1):
        raise DistUsageError(f"init_process_group: world_size must be a positive integer, got {world_size!r}")
    if rank != -1 and (not isinstance(rank, int) or rank < 0 or (world_size != -1 and rank >= world_size)):
        raise DistUsageError(
            f"init_process_group: rank {rank!r} is outside the world of size {world_size} "
            f"(ranks are 0..{world_size - 1})"
        )
    _check_backend(backend)
    kwargs: dict[str, Any] = {"world_size": world_size, "rank": rank, "group_name": group_name}
    if init_method is not None:
        kwargs["init_method"] = init_method
    if store is not None:
        kwargs["store"] = store
    if timeout is not None:
        kwargs["timeout"] = _timeout(timeout)
    if pg_options is not None:
        kwargs["pg_options"] = pg_options
    if device_id is not None:
        kwargs["device_id"] = device_id
    if store is None and init_method in (None, "env://"):
        kwargs.update(elastic_attempt_store(tdist, kwargs.get("timeout")))
    try:
        tdist.init_process_group(backend, **kwargs)
        register_group(None, _check_group(tdist, None, kwargs.get("timeout"), False))
    except ValueError as e:
        raise DistUsageError(f"init_process_group: {e}") from e
    except RuntimeError as e:
        raise DistBackendError(f"init_process_group (rank {rank}, world size {world_size}): {e}") from e


def _check_group(tdist: Any, ranks: Any, timeout: Any, local: bool) -> Any:
    """A gloo group of the same ranks for the cross-rank call checks (``_check.py``); every rank calls it."""
    if (len(ranks) if ranks is not None else tdist.get_world_size()) < 2:
        return None
    return tdist.new_group(ranks, timeout, "gloo", use_local_synchronization=local)


def destroy_process_group(group: Any = None) -> None:
    """Leave ``group`` (the default group and every other one when None)."""
    tdist = _require("destroy_process_group")
    side = unregister_group(group)
    _BACKEND_OF.clear()
    if side is not None:
        tdist.destroy_process_group(side)
    tdist.destroy_process_group(group)


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (default: the world); -1 when it is not a member."""
    return int(_require("get_rank").get_rank(group))


def get_world_size(group: Any = None) -> int:
    """The number of processes in ``group`` (default: the world)."""
    return int(_require("get_world_size").get_world_size(group))


def get_backend(group: Any = None) -> str:
    """The backend of ``group`` ('gloo', 'nccl', ...)."""
    return str(_require("get_backend").get_backend(group))


def get_process_group_ranks(group: Any) -> list[int]:
    """The global ranks in ``group``."""
    tdist = _require("get_process_group_ranks")
    return list(tdist.get_process_group_ranks(group if group is not None else tdist.group.WORLD))


def new_group(
    ranks: Any = None,
    timeout: Any = None,
    backend: str | None = None,
    pg_options: Any = None,
    use_local_synchronization: bool = False,
) -> Any:
    """A process group of ``ranks`` (every rank must call it, members or not, in the same order)."""
    tdist = _require("new_group")
    world = tdist.get_world_size()
    if ranks is not None:
        ranks = sorted(int(r) for r in ranks)
        bad = [r for r in ranks if not 0 <= r < world]
        if bad:
            raise DistUsageError(f"new_group: ranks {bad} are outside the world of size {world} (0..{world - 1})")
        if len(set(ranks)) != len(ranks):
            raise DistUsageError(f"new_group: ranks {ranks} list a rank twice")
    _check_backend(backend)
    pg = tdist.new_group(
        ranks, _timeout(timeout), backend, pg_options, use_local_synchronization=use_local_synchronization
    )
    if use_local_synchronization and tdist.get_rank() not in (ranks if ranks is not None else range(world)):
        return pg  # only the members take part in a locally synchronised group's creation
    members = ranks if ranks is not None else list(range(world))
    side = _check_group(tdist, members, _timeout(timeout), use_local_synchronization)
    if side is not None and pg is not tdist.GroupMember.NON_GROUP_MEMBER:
        register_group(pg, side)
    return pg


@distributed_call
def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Any:
    """Wait until every rank of ``group`` reaches this call."""
    tdist = _require("barrier")
    kw = {"device_ids": device_ids} if device_ids is not None else {}
    try:
        return tdist.barrier(group, async_op=async_op, **kw)
    except RuntimeError as e:
        raise backend_error("barrier", group, e) from e


@distributed_call
def monitored_barrier(group: Any = None, timeout: Any = None, wait_all_ranks: bool = False) -> None:
    """A barrier (gloo) that names the ranks which did not reach it within ``timeout``."""
    tdist = _require("monitored_barrier")
    try:
        tdist.monitored_barrier(group, _timeout(timeout), wait_all_ranks=wait_all_ranks)
    except RuntimeError as e:
        raise backend_error("monitored_barrier", group, e) from e


def backend_error(op: str, group: Any, e: BaseException, note: str = "") -> DistBackendError:
    """A backend failure as an error naming this rank, the world and the operation (``note`` appended)."""
    tdist = torch_modules()[1]
    try:
        where = f"rank {tdist.get_rank()} of {tdist.get_world_size(group)}"
    except (RuntimeError, ValueError):
        where = "this rank"
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if "nccl" in msg.lower() and "invalid usage" in msg.lower():
        note = (
            "; NCCL's invalid usage is most often two ranks on one GPU, which NCCL refuses: give each rank a GPU "
            "of its own (cuda:LOCAL_RANK), or use backend='gloo' for ranks that share one" + note
        )
    return DistBackendError(
        f"{op} failed on {where}: {msg} (another rank may have failed, been killed, or not "
        f"called the same collective within the group's timeout){note}"
    )


class _Group:
    """``group.WORLD``: the default process group (None before ``init_process_group``)."""

    @property
    def WORLD(self) -> Any:  # noqa: N802 - PyTorch's name
        return torch_modules()[1].group.WORLD if is_initialized() else None


group = _Group()


def require(op: str) -> Any:
    """torch.distributed, after checking the default group exists (for the collectives)."""
    return _require(op)
