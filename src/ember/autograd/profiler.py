"""``ember.autograd.profiler`` (PyTorch's ``torch.autograd.profiler``): host time of each operator call, each
backward node and each ``record_function`` range, summarised as PyTorch's tables.

While a profile records, ``Function.apply`` hands each operator call to the recorder (``_function.TRACE``: one
read per call otherwise) and the engine times each node (``_engine.PROFILE``: read once per backward). An
operator that runs others is one event (the ops inside it are not recorded apart), and the times are the
host's: on a GPU backend an operator's time is its launch, not its kernel. ``ember.profiler`` adds schedules.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from .._tensor import Tensor
from ._engine import PROFILE
from ._function import TRACE, Function, bypass, install_trace
from ._profiler_events import EventList, FunctionEvent, FunctionEventAvg, nest

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "emit_nvtx", "profile", "record_function"]

_LOCK = threading.Lock()
_ACTIVE: list[Recorder] = []  # the recorder that records now (one at a time)


def _shapes(args: tuple[Any, ...]) -> list[list[int]]:
    return [list(a.shape) if isinstance(a, Tensor) else [] for a in args]


def _nbytes(out: Any) -> int:
    outs = out if isinstance(out, tuple) else (out,)
    return sum(o._data.nbytes for o in outs if isinstance(o, Tensor))


class Recorder:
    """The events of one recording; installs and removes the hooks."""

    def __init__(self, record_shapes: bool = False, profile_memory: bool = False) -> None:
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.events: list[FunctionEvent] = []
        self._run = Function.__dict__["apply"].__func__

    def start(self) -> None:
        with _LOCK:
            install_trace(self._op, "profiler")
            _ACTIVE.append(self)
            PROFILE[0] = self._node

    def stop(self) -> None:
        with _LOCK:
            if _ACTIVE and _ACTIVE[-1] is self:
                _ACTIVE.pop()
                TRACE[0] = None
                PROFILE[0] = None

    def _op(self, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        t0 = time.perf_counter_ns()
        with bypass():  # the operators this one runs are part of its event
            out = self._run(cls, *args, **kwargs)
        t1 = time.perf_counter_ns()
        self.events.append(FunctionEvent(
            cls.__name__.lstrip("_"), t0, t1, threading.get_ident(), "op", _shapes(args) if self.record_shapes else [],
            _nbytes(out) if self.profile_memory else 0))  # fmt: skip
        return out

    def _node(self, node: Any, t0: int, t1: int) -> None:
        self.events.append(FunctionEvent(node.name.lstrip("_"), t0, t1, threading.get_ident(), "backward"))

    def add_range(self, name: str, t0: int, t1: int) -> None:
        self.events.append(FunctionEvent(name, t0, t1, threading.get_ident(), "user"))

    def event_list(self) -> EventList:
        events = list(self.events)
        for e in events:
            e.cpu_children, e.cpu_parent = [], None
        nest(events)
        return EventList(events, self.profile_memory, self.record_shapes)


class record_function(contextlib.ContextDecorator):  # noqa: N801 - PyTorch's name
    """A named range in the profile (``with record_function("forward"):`` or as a decorator)."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name, self.args = name, args
        self._starts: list[tuple[int, Recorder | None]] = []

    def __enter__(self) -> record_function:
        self._starts.append((time.perf_counter_ns(), _ACTIVE[-1] if _ACTIVE else None))
        return self

    def __exit__(self, *exc: object) -> None:
        t0, rec = self._starts.pop()
        if rec is not None and _ACTIVE and _ACTIVE[-1] is rec:
            rec.add_range(self.name, t0, time.perf_counter_ns())


class profile:  # noqa: N801 - PyTorch's name
    """Record the block (``with profile() as prof:``); then ``prof.key_averages().table(...)``."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: Any = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config: Any = None, acc_events: bool = False, custom_trace_id_callback: Any = None,
                 post_processing_timeout_s: Any = None, activity_filters: Any = None) -> None:  # fmt: skip
        self.enabled = enabled
        self._recorder = Recorder(record_shapes, profile_memory)
        self.function_events: EventList | None = None

    def __enter__(self) -> profile:
        if self.enabled:
            self._recorder.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self._recorder.stop()
            self.function_events = self._recorder.event_list()

    def _events(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("profiler: no results yet; leave the profile's block first")
        return self.function_events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """One row per operator (and per input shapes with ``group_by_input_shape``)."""
        return self._events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, *args: Any, **kwargs: Any) -> str:
        """The events' table (see :meth:`EventList.table`)."""
        return self._events().table(*args, **kwargs)

    def export_chrome_trace(self, path: str) -> None:
        """The events as a Chrome trace file."""
        self._events().export_chrome_trace(path)

    def total_average(self) -> FunctionEventAvg:
        return self._events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """The events' self times summed, in microseconds."""
        return self._events().self_cpu_time_total


@contextlib.contextmanager
def emit_nvtx(enabled: bool = True, record_shapes: bool = False) -> Iterator[None]:
    """NVTX ranges for NVIDIA's tools: Ember emits none (its GPU backends' own libraries do); the block runs as is."""
    yield
