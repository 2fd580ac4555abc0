"""The profiler's events and their summaries: ``key_averages()``, ``table()``, ``export_chrome_trace()``.

An event is one operator call (``Function.apply``), one backward node, or one ``record_function`` range, with
its host start and end times, thread, input shapes and the bytes of the tensors it made (when asked). Self
time is the event's time less the time of the events nested in it on its thread.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg"]


@dataclass(eq=False)
class FunctionEvent:
    """One profiled call: ``name``, host times in ns, ``thread``, ``input_shapes``, and ``own_memory``: the bytes of
    the tensors it made itself (``cpu_memory_usage`` adds the nested events')."""

    name: str
    start_ns: int
    end_ns: int
    thread: int
    kind: str = "op"  # "op", "backward", "user"
    input_shapes: list[list[int]] = field(default_factory=list)
    own_memory: int = 0
    cpu_children: list[FunctionEvent] = field(default_factory=list)
    cpu_parent: FunctionEvent | None = None

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        """Time from start to end, in microseconds."""
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def self_cpu_time_total(self) -> float:
        """Time less the nested events' time, in microseconds."""
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_memory_usage(self) -> int:
        """Bytes of the tensors made inside the event (its own and the nested events')."""
        return self.own_memory + sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.own_memory

    @property
    def is_user_annotation(self) -> bool:
        return self.kind == "user"

    device_time_total = self_device_time_total = 0.0  # host times only (see ember.profiler)


class FunctionEventAvg:
    """The events of one name (and input shapes, when grouped by them) summed: PyTorch's ``key_averages`` rows."""

    def __init__(self, key: str, input_shapes: Any = None) -> None:
        self.key, self.input_shapes = key, input_shapes
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.is_user_annotation = False
        self.device_time_total = self.self_device_time_total = self.cuda_time_total = 0.0

    def add(self, e: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        n = e.count if isinstance(e, FunctionEventAvg) else 1
        self.count += n
        self.cpu_time_total += e.cpu_time_total
        self.self_cpu_time_total += e.self_cpu_time_total
        self.cpu_memory_usage += e.cpu_memory_usage
        self.self_cpu_memory_usage += e.self_cpu_memory_usage
        self.is_user_annotation = e.is_user_annotation
        return self

    @property
    def cpu_time(self) -> float:
        """Average time per call, in microseconds."""
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self) -> str:
        return f"<FunctionEventAvg key={self.key} count={self.count} cpu_time_total={self.cpu_time_total:.3f}us>"


_SORT = {
    "cpu_time_total": "cpu_time_total", "self_cpu_time_total": "self_cpu_time_total", "cpu_time": "cpu_time",
    "count": "count", "cpu_memory_usage": "cpu_memory_usage", "self_cpu_memory_usage": "self_cpu_memory_usage",
    # device columns: Ember's profiler times the host only, so these sort as PyTorch's do without a GPU
    "cuda_time_total": "device_time_total", "self_cuda_time_total": "self_device_time_total",
    "device_time_total": "device_time_total", "self_device_time_total": "self_device_time_total",
    "cuda_memory_usage": "device_time_total", "self_cuda_memory_usage": "self_device_time_total",
}  # fmt: skip


def _time(us: float) -> str:
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3f}s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _memory(b: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(b) >= size:
            return f"{b / size:.2f} {unit}"
    return f"{b} B"


class EventList(list):  # type: ignore[type-arg]
    """A list of events (or of averages) with PyTorch's summaries."""

    def __init__(self, events: Iterable[Any] = (), profile_memory: bool = False, with_shapes: bool = False) -> None:
        super().__init__(events)
        self._memory, self._shapes = profile_memory, with_shapes

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of the events' self times, in microseconds."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """One row per name (and per input shapes with ``group_by_input_shape``)."""
        rows: dict[Any, FunctionEventAvg] = {}
        for e in self:
            shapes = str(e.input_shapes) if group_by_input_shape else None
            k = (e.key, shapes)
            row = rows.get(k)
            if row is None:
                row = rows[k] = FunctionEventAvg(e.key, e.input_shapes if group_by_input_shape else None)
            row.add(e)
        return EventList(rows.values(), self._memory, group_by_input_shape)

    def total_average(self) -> FunctionEventAvg:
        """All events summed in one row."""
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:  # fmt: skip
        """PyTorch's table: name, self and total time with their shares, average, memory, calls (and shapes)."""
        rows = [e for e in self if not (top_level_events_only and getattr(e, "cpu_parent", None) is not None)]
        if sort_by is not None:
            if sort_by not in _SORT:
                raise ValueError(f"table: cannot sort by {sort_by!r}; use one of {sorted(_SORT)}")
            rows.sort(key=lambda e: getattr(e, _SORT[sort_by], 0.0), reverse=True)
        rows = rows[:row_limit] if row_limit is not None and row_limit > 0 else rows
        total = sum(e.self_cpu_time_total for e in self) or 1.0
        heads = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
        if self._memory:
            heads += ["CPU Mem", "Self CPU Mem"]
        heads.append("# of Calls")
        if self._shapes:
            heads.append("Input Shapes")
        name_w = min(max([len(h) for h in (heads[0],)] + [len(e.key) for e in rows]) + 4, max_name_column_width)
        widths = [name_w] + [12] * (len(heads) - 1)
        if self._shapes:
            widths[-1] = min(max([len(str(e.input_shapes)) for e in rows] + [12]) + 2, max_shapes_column_width)
        rule = "  ".join("-" * w for w in widths)

        def line(cells: list[str]) -> str:
            return "  ".join(c[:w].rjust(w) for c, w in zip(cells, widths, strict=True))

        out = [header] if header else []
        out += [rule, line(heads), rule]
        for e in rows:
            count = getattr(e, "count", 1)
            avg = e.cpu_time_total / max(count, 1)
            cells = [e.key if len(e.key) <= name_w else e.key[: name_w - 3] + "...",
                     f"{100 * e.self_cpu_time_total / total:.2f}%", _time(e.self_cpu_time_total),
                     f"{100 * e.cpu_time_total / total:.2f}%", _time(e.cpu_time_total), _time(avg)]  # fmt: skip
            if self._memory:
                cells += [_memory(e.cpu_memory_usage), _memory(e.self_cpu_memory_usage)]
            cells.append(str(count))
            if self._shapes:
                cells.append(str(e.input_shapes))
            out.append(line(cells))
        out += [rule, f"Self CPU time total: {_time(sum(e.self_cpu_time_total for e in self))}", ""]
        return "\n".join(out)

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """The events as a Chrome trace (``chrome://tracing``, Perfetto): complete events, microseconds."""
        origin = min((e.start_ns for e in self), default=0)
        cat = {"op": "cpu_op", "backward": "cpu_op", "user": "user_annotation"}
        trace = [{"name": e.name, "ph": "X", "cat": cat[e.kind],
                  "ts": (e.start_ns - origin) / 1e3, "dur": (e.end_ns - e.start_ns) / 1e3, "pid": os.getpid(),
                  "tid": e.thread, "args": {"Input Dims": e.input_shapes} if e.input_shapes else {}}
                 for e in self if isinstance(e, FunctionEvent)]  # fmt: skip
        tmp = f"{os.fspath(path)}.tmp"
        with open(tmp, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)
        os.replace(tmp, path)


def nest(events: list[FunctionEvent]) -> None:
    """Give each event its parent (the innermost event containing it on its thread) and children."""
    by_thread: dict[int, list[FunctionEvent]] = {}
    for e in events:
        by_thread.setdefault(e.thread, []).append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start_ns, -e.end_ns))
        stack: list[FunctionEvent] = []
        for e in evs:
            while stack and stack[-1].end_ns <= e.start_ns:
                stack.pop()
            if stack and e.end_ns <= stack[-1].end_ns:
                e.cpu_parent = stack[-1]
                stack[-1].cpu_children.append(e)
            stack.append(e)
