"""``DistributedDataParallel``: one model replica per process, gradients averaged during backward.

PyTorch's semantics: parameters and buffers are broadcast from rank 0 at construction; every forward (after
one that will synchronise) broadcasts the buffers from rank 0 when ``broadcast_buffers`` (BatchNorm
statistics); backward averages gradients in buckets that are all-reduced while backward still runs
(``_reducer.py``); ``no_sync()`` accumulates locally; the wrapped model is ``.module`` and the state dict
keys start with ``module.``.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

from ..._tensor import Tensor
from ...autograd._capture import CAPTURE, collective, opaque, refuse, touch
from ...autograd._grad_mode import is_grad_enabled
from ...distributed._coalesced import broadcast_coalesced, check_same_across_ranks
from ...distributed._group import DistUsageError, require
from ..module import Module
from ._reducer import Reducer

__all__ = ["DistributedDataParallel"]

_WRAPPED: weakref.WeakKeyDictionary[Module, Any] = weakref.WeakKeyDictionary()


def _tensors(x: Any) -> Iterator[Tensor]:
    if isinstance(x, Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _tensors(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _tensors(v)


def _to(x: Any, device: Any) -> Any:
    if isinstance(x, Tensor):
        return x.to(device=device)
    if isinstance(x, (list, tuple)):
        return type(x)(_to(v, device) for v in x)
    if isinstance(x, dict):
        return {k: _to(v, device) for k, v in x.items()}
    return x


class DistributedDataParallel(Module):
    """Data-parallel training of ``module`` over the ranks of ``process_group`` (default: the world).

    Every rank builds the same model, wraps it, and trains on its own share of the data (a
    ``DistributedSampler``); after ``loss.backward()`` every rank holds the gradients averaged over all
    ranks, so identical optimizer steps keep the replicas identical. ``bucket_cap_mb`` sizes the buckets
    that are all-reduced while backward goes on; ``find_unused_parameters=True`` allows parameters that
    some forward does not use (their gradient then stays as it is when no rank used them). ``static_graph`` and
    ``check_reduction`` are accepted for PyTorch's signature and change nothing: the reducer counts each
    forward's own graph. ``gradient_as_bucket_view=True`` (PyTorch's option) leaves each ``.grad`` as a view of
    its bucket instead of copying the averages back: one pass over the gradients less per step, and the next
    backward overwrites them in place (save a copy if you keep gradients across steps).
    """

    def __init__(
        self,
        module: Module,
        device_ids: list[Any] | None = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        static_graph: bool = False,
        init_sync: bool = True,
        gradient_as_bucket_view: bool = False,
    ) -> None:
        super().__init__()
        refuse("a DistributedDataParallel is made inside it (its construction's collectives are not captured)")
        tdist = require("DistributedDataParallel")
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be an ember.nn.Module, got {type(module).__name__}")
        if dim != 0:
            raise DistUsageError(f"DistributedDataParallel: dim must be 0 (each rank feeds its own batch), got {dim}")
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise DistUsageError(
                "DistributedDataParallel: the module has no parameter that requires a gradient; "
                "there is nothing to average (no wrapper is needed)"
            )
        devices = {p.device for _, p in module.named_parameters()} | {b.device for _, b in module.named_buffers()}
        if len(devices) > 1:
            raise DistUsageError(
                f"DistributedDataParallel: the module's tensors are on several devices {devices}; "
                "put the whole replica on one device"
            )
        dev = next(iter(devices))
        if device_ids is not None and (dev.type != "cuda" or len(device_ids) != 1):
            raise DistUsageError(
                f"DistributedDataParallel: device_ids={device_ids} is for a module on one CUDA "
                f"device (device_ids=[local_rank]); this module is on {dev}: leave it None"
            )
        backend = tdist.get_backend(process_group)
        if backend == "nccl" and dev.type != "cuda":
            raise DistUsageError(
                f"DistributedDataParallel: the group's backend is NCCL but the module is on {dev}; "
                "move it to cuda:LOCAL_RANK or use backend='gloo'"
            )
        wrapper = _WRAPPED.get(module)
        if wrapper is not None and wrapper() is not None:
            raise DistUsageError(
                "DistributedDataParallel: this module is already wrapped by a live "
                "DistributedDataParallel; use that one (or delete it first)"
            )
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        self.broadcast_buffers, self.process_group = broadcast_buffers, process_group
        self.find_unused_parameters, self.static_graph = find_unused_parameters, static_graph
        self.bucket_cap_mb = 25.0 if bucket_cap_mb is None else float(bucket_cap_mb)
        if self.bucket_cap_mb <= 0:
            raise DistUsageError(f"DistributedDataParallel: bucket_cap_mb must be > 0, got {bucket_cap_mb}")
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._device = dev if device_ids is not None else None
        states = [(n, p) for n, p in module.named_parameters()] + [(n, b) for n, b in module.named_buffers()]
        check_same_across_ranks(
            "DistributedDataParallel", [(n, tuple(t.shape), str(t.dtype)) for n, t in states], process_group
        )
        if init_sync:
            broadcast_coalesced([t for _, t in states], self._src(), process_group)
        self._sync_buffers = [b for _, b in module.named_buffers()]
        _WRAPPED[module] = weakref.ref(self)
        CAPTURE.stateful.add(self)
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.reducer = Reducer(
            [p for _, p in named],
            [n for n, _ in named],
            process_group,
            self.bucket_cap_mb,
            find_unused_parameters,
            gradient_as_bucket_view=gradient_as_bucket_view,
        )

    def _src(self) -> int:
        tdist = require("DistributedDataParallel")
        if self.process_group is None:
            return 0
        return int(tdist.get_process_group_ranks(self.process_group)[0])

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        touch(self)  # ember.compile: a program is for one sync state (and the calls below are its host steps)
        if self.require_forward_param_sync and self.broadcast_buffers and self._sync_buffers:
            self._broadcast_buffers()
        if self._device is not None:
            inputs, kwargs = _to(inputs, self._device), _to(kwargs, self._device)
        out = self.module(*inputs, **kwargs)
        sync = is_grad_enabled() and self.require_backward_grad_sync
        if sync:
            self.reducer.prepare(list(_tensors(out)))
        elif is_grad_enabled():
            self.reducer.forward_without_sync()
        if CAPTURE.tracer is None:
            self.require_forward_param_sync = sync
        else:
            self._set_forward_sync(sync)
        if self.output_device is not None:
            out = _to(out, self.output_device)
        return out

    @collective
    def _broadcast_buffers(self) -> None:
        """The buffers from the first rank (BatchNorm statistics): a host step of a captured step."""
        broadcast_coalesced(self._sync_buffers, self._src(), self.process_group)

    @opaque
    def _set_forward_sync(self, sync: bool) -> None:
        self.require_forward_param_sync = sync

    def _capture_writes(self, name: str) -> tuple[list[Any], bool]:
        """What host step ``name`` writes: ``(tensors, their data too)`` (``ember.compile`` orders guards by it)."""
        return (self._sync_buffers, True) if name == "_broadcast_buffers" else ([], False)

    def _capture_state(self) -> tuple[bool, bool]:
        """What decides the calls a forward and backward make (``ember.compile`` guards a program on it)."""
        return self.require_backward_grad_sync, self.require_forward_param_sync

    def _capture_restore(self, state: tuple[bool, bool]) -> None:
        self.require_backward_grad_sync, self.require_forward_param_sync = state

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes inside accumulate gradients locally; the first one after it averages the total."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def extra_repr(self) -> str:
        return f"bucket_cap_mb={self.bucket_cap_mb}, find_unused_parameters={self.find_unused_parameters}"
