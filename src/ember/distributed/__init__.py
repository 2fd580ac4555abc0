"""``ember.distributed``: torch.distributed's API on Ember tensors (needs torch; says so in one line without it).

Process groups, rendezvous and transports are torch.distributed's (gloo on CPUs, NCCL on GPUs, ``env://`` as
``torchrun`` sets it). Ember tensors go to it without a copy where the memory allows (NumPy arrays through
``torch.from_numpy``, torch-backend tensors as they are, CuPy through DLPack); in-place collectives bump the
tensor's version. ``ember.nn.parallel.DistributedDataParallel`` trains on it, ``ember.distributed.optim``
shards optimizer state.
"""

from __future__ import annotations

from typing import Any

from ._check import collective_checks_enabled, set_collective_checks
from ._collectives import (
    Work,
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_gather_single,
    all_reduce,
    broadcast,
    broadcast_object_list,
    gather,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter_single,
    reduce_scatter_tensor,
    scatter,
    send,
)
from ._group import (
    Backend,
    DistUsageError,
    ReduceOp,
    backend_status,
    barrier,
    destroy_process_group,
    get_backend,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_nccl_available,
    is_torchelastic_launched,
    monitored_barrier,
    new_group,
)
from ._interop import DistBackendError, DistError, NotInitializedError

__all__ = [
    "Backend",
    "DistBackendError",
    "DistError",
    "DistUsageError",
    "NotInitializedError",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_gather_single",
    "all_reduce",
    "backend_status",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "collective_checks_enabled",
    "destroy_process_group",
    "gather",
    "get_backend",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "irecv",
    "is_available",
    "is_gloo_available",
    "is_initialized",
    "is_nccl_available",
    "is_torchelastic_launched",
    "isend",
    "monitored_barrier",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter_single",
    "reduce_scatter_tensor",
    "scatter",
    "send",
    "set_collective_checks",
]

#: torch.distributed's stores, usable as ``init_process_group(store=...)``
_STORES = ("Store", "TCPStore", "FileStore", "HashStore", "PrefixStore")


def __getattr__(name: str) -> Any:
    if name in _STORES:
        from ._interop import torch_modules

        return getattr(torch_modules()[1], name)
    if name in ("optim", "nn"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'ember.distributed' has no attribute {name!r}")
