"""``ember.profiler`` (PyTorch's ``torch.profiler``): a profile over training steps, with PyTorch's schedules.

``with profile(schedule=schedule(wait=1, warmup=1, active=3), on_trace_ready=tensorboard_trace_handler(d)) as p:``
then ``p.step()`` after each step records the active steps (each inside a ``ProfilerStep#N`` range) and hands
each finished cycle to ``on_trace_ready``. Events and tables are ``ember.autograd.profiler``'s: host times of
operator calls, backward nodes and ``record_function`` ranges (``ProfilerActivity.CUDA`` is accepted: a GPU
backend's operators are timed on the host, at their launch).
"""

from __future__ import annotations

import enum
import gzip
import os
import shutil
import socket
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ..autograd.profiler import EventList, FunctionEvent, Recorder, record_function

__all__ = [
    "EventList", "FunctionEvent", "ProfilerAction", "ProfilerActivity", "kineto_available", "profile",
    "record_function", "schedule", "supported_activities", "tensorboard_trace_handler",
]  # fmt: skip


class ProfilerActivity(enum.IntEnum):
    """What to profile (PyTorch's values); Ember records host activity for all of them."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What a schedule asks of a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def supported_activities() -> set[ProfilerActivity]:
    """The activities Ember's profiler measures: the host's."""
    return {ProfilerActivity.CPU}


def kineto_available() -> bool:
    """False: Ember's profiler is its own host recorder, not PyTorch's Kineto library."""
    return False


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:  # fmt: skip
    """Steps in cycles of ``wait`` idle, ``warmup`` and ``active`` recorded steps (the last one saves), ``repeat``
    times (0: forever), after ``skip_first`` steps; ``skip_first_wait`` drops the first cycle's wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(f"schedule: need wait, warmup, repeat, skip_first >= 0 and active > 0; got wait={wait}, "
                         f"warmup={warmup}, active={active}, repeat={repeat}, skip_first={skip_first}")  # fmt: skip
    if warmup == 0:
        warnings.warn("schedule: without warmup steps the first recorded step may be slower", stacklevel=2)
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise ValueError(f"schedule: step must be >= 0, got {step}")
        k = step - skip_first
        if k < 0:
            return ProfilerAction.NONE
        k += wait if skip_first_wait else 0  # the first cycle starts at its warmup
        if repeat and k >= repeat * cycle:
            return ProfilerAction.NONE
        phase = k % cycle
        if phase < wait:
            return ProfilerAction.NONE
        if phase < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD_AND_SAVE if phase == cycle - 1 else ProfilerAction.RECORD

    return action


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable[[Any], None]:  # fmt: skip
    """An ``on_trace_ready`` that writes each cycle's Chrome trace into ``dir_name`` (TensorBoard's profile
    plugin reads ``<worker>.<ms>.pt.trace.json[.gz]``)."""

    def handler(prof: Any) -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        ms = time.time_ns() // 1_000_000
        while os.path.exists(path := os.path.join(dir_name, f"{name}.{ms}.pt.trace.json")):
            ms += 1  # two cycles in one millisecond: each keeps its own file (the second overwrote the first)
        prof.export_chrome_trace(path)
        if use_gzip:
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.remove(path)

    return handler


class profile:  # noqa: N801 - PyTorch's name
    """Record a block, or the steps a ``schedule`` picks (call :meth:`step` after each training step)."""

    def __init__(self, *, activities: Iterable[Any] | None = None, schedule: Callable[[int], Any] | None = None,
                 on_trace_ready: Callable[[Any], Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None, execution_trace_observer: Any = None,
                 acc_events: bool = False, use_cuda: bool | None = None, custom_trace_id_callback: Any = None,
                 post_processing_timeout_s: Any = None) -> None:  # fmt: skip
        self.activities = set(activities) if activities is not None else supported_activities()
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.step_num = 0
        self.current_action = self._action(0)
        self._rec: Recorder | None = None
        self._last: EventList | None = None
        self._step_range: record_function | None = None

    def _action(self, step: int) -> ProfilerAction:
        return ProfilerAction.RECORD if self.schedule is None else ProfilerAction(self.schedule(step).value)

    def _begin(self) -> None:
        self._rec = Recorder(self.record_shapes, self.profile_memory)
        self._rec.start()

    def _finish(self) -> None:
        rec, self._rec = self._rec, None
        assert rec is not None
        rec.stop()
        self._last = rec.event_list()
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _range(self, begin: bool) -> None:
        if self.schedule is None:
            return
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None
        if begin:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def start(self) -> None:
        """Begin (``__enter__`` calls it)."""
        if self.current_action in _RECORDING:
            self._begin()
        self._range(True)

    def stop(self) -> None:
        """End; a recording in progress is finished and handed to ``on_trace_ready`` (``__exit__`` calls it)."""
        self._range(False)
        if self._rec is not None:
            self._finish()

    def step(self) -> None:
        """The end of a training step: the schedule's next action starts, continues or saves a recording."""
        self._range(False)
        before = self.current_action
        self.step_num += 1
        self.current_action = self._action(self.step_num)
        if self._rec is not None and (
            before is ProfilerAction.RECORD_AND_SAVE or self.current_action not in _RECORDING
        ):
            self._finish()
        if self._rec is None and self.current_action in _RECORDING:
            self._begin()
        self._range(True)

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def events(self) -> EventList:
        """The last finished recording's events."""
        if self._last is None:
            raise RuntimeError("profiler: no recording has finished yet")
        return self._last

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """One row per operator (and per input shapes with ``group_by_input_shape``)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """The last recording as a Chrome trace file."""
        self.events().export_chrome_trace(path)
