"""``ember.utils.benchmark`` (PyTorch's ``torch.utils.benchmark``): time a statement with ``Timer``, read the
result as a ``Measurement`` (median, IQR, warnings), and put several side by side with ``Compare``.

As in PyTorch, a ``Timer`` runs its statement on ``num_threads`` threads (1 unless told), restoring the
thread count afterwards.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import timeit
from collections.abc import Callable, Iterable
from typing import Any

from .._threads import get_num_threads, set_num_threads

__all__ = ["Compare", "Measurement", "TaskSpec", "Timer", "select_unit", "trim_sigfig"]

_IQR_WARN = 0.1  # an IQR above 10% of the median gets PyTorch's warning


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What was timed: the statement, its setup, its labels and the thread count."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """``label: sub_label`` (the statement in place of a missing label)."""
        if "\n" in self.stmt and self.label is None:
            return "stmt:\n" + "\n".join("  " + line for line in self.stmt.splitlines())
        return (self.label or self.stmt) + (f": {self.sub_label}" if self.sub_label else "")


def select_unit(t: float) -> tuple[str, float]:
    """The unit for a time in seconds, and its scale: ``("us", 1e-6)``."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3) if t > 0 else -3, "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures."""
    if x == 0:
        return 0.0
    magnitude = math.floor(math.log10(abs(x)))
    return round(x, n - magnitude - 1)


class Measurement:
    """The times of one statement: ``raw_times`` (seconds per block of ``number_per_run`` runs) and what
    follows from them (``times`` per run, ``median``, ``mean``, ``iqr``)."""

    def __init__(self, number_per_run: int, raw_times: list[float], task_spec: TaskSpec,
                 metadata: dict[str, Any] | None = None) -> None:  # fmt: skip
        self.number_per_run, self.raw_times, self.task_spec = number_per_run, list(raw_times), task_spec
        self.metadata = metadata

    def __getattr__(self, name: str) -> Any:  # the task spec's fields: stmt, label, description, ...
        if name != "task_spec" and name in TaskSpec.__dataclass_fields__:
            return getattr(self.task_spec, name)
        raise AttributeError(name)

    @property
    def times(self) -> list[float]:
        """Seconds per run, one entry per block."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        """The median of ``times``."""
        return statistics.median(self.times)

    @property
    def mean(self) -> float:
        """The mean of ``times``."""
        return statistics.fmean(self.times)

    @property
    def iqr(self) -> float:
        """The interquartile range of ``times`` (0 for one block)."""
        if len(self.times) < 2:
            return 0.0
        q = statistics.quantiles(self.times, n=4, method="inclusive")
        return q[2] - q[0]

    @property
    def significant_figures(self) -> int:
        """How many figures of the median its confidence interval supports (1 to 4; PyTorch's estimate from the
        inner half of the times, with a 25 ns floor on the interval)."""
        t = sorted(self.times)
        inner = t[len(t) // 4 : max(len(t) * 3 // 4, len(t) // 4 + 1)]
        ci = max(1.645 * statistics.pstdev(inner) / math.sqrt(len(inner)), 25e-9)
        return min(max(math.floor(math.log10(self.median / ci)), 1), 4)

    @property
    def has_warnings(self) -> bool:
        """True when the IQR is over 10% of the median (a noisy machine)."""
        return len(self.times) > 1 and self.iqr > _IQR_WARN * self.median

    @property
    def title(self) -> str:
        """The task's title (``label: sub_label``)."""
        return self.task_spec.title

    @property
    def env(self) -> str | None:
        """The environment label given to the Timer."""
        return self.task_spec.env

    def meets_confidence(self, threshold: float = _IQR_WARN) -> bool:
        """True when the IQR is within ``threshold`` of the median."""
        return self.iqr / self.median < threshold

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """Pool the blocks of measurements of the same task (in runs of one block each)."""
        pooled: dict[TaskSpec, list[float]] = {}
        for m in measurements:
            pooled.setdefault(m.task_spec, []).extend(m.times)
        return [Measurement(1, times, spec) for spec, times in pooled.items()]

    def __repr__(self) -> str:
        unit, scale = select_unit(self.median)
        lines = [f"<{type(self).__module__}.{type(self).__name__} object at {hex(id(self))}>", self.title]
        if self.task_spec.description:
            lines.append(self.task_spec.description)
        threads = f"{self.task_spec.num_threads} thread" + ("s" if self.task_spec.num_threads > 1 else "")
        if len(self.times) == 1:
            lines += [f"  {self.median / scale:.2f} {unit}", f"  1 measurement, {self.number_per_run} runs , {threads}"]
        else:
            q = statistics.quantiles(self.times, n=4, method="inclusive")
            lines += [
                f"  Median: {self.median / scale:.2f} {unit}",
                f"  IQR:    {self.iqr / scale:.2f} {unit} ({q[0] / scale:.2f} to {q[2] / scale:.2f})",
                f"  {len(self.times)} measurements, {self.number_per_run} runs per measurement, {threads}",
            ]
        if self.has_warnings:
            lines += [f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% of the median "
                      "measurement.", "           This suggests significant environmental influence."]  # fmt: skip
        return "\n".join(lines)


class Timer:
    """Time ``stmt`` (after ``setup``) in ``globals`` on ``num_threads`` threads, as ``torch.utils.benchmark.Timer``."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timeit.default_timer, globals: dict[str, Any] | None = None,
                 label: str | None = None, sub_label: str | None = None, description: str | None = None,
                 env: str | None = None, num_threads: int = 1, language: str = "python") -> None:  # fmt: skip
        if language not in ("python", "py"):
            raise ValueError(f"Timer: only Python statements can be timed, got language={language!r}")
        self._task_spec = TaskSpec(stmt, setup, global_setup, label, sub_label, description, env, num_threads)
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=dict(globals or {}))

    def _run(self, number: int) -> float:
        before = get_num_threads()
        set_num_threads(self._task_spec.num_threads)
        try:
            return self._timer.timeit(number)
        finally:
            set_num_threads(before)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` runs (after one warm-up run)."""
        self._run(1)
        return Measurement(number, [self._run(number)], self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        """Not offered (as in PyTorch): use ``blocked_autorange``."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], None] | None = None) -> None:
        """Not offered (as in PyTorch): use ``blocked_autorange``."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_block: float = 0.0025) -> int:
        number = 1
        while self._run(number) < min_block:
            number *= 10
        return number

    def blocked_autorange(self, callback: Callable[[int, float], None] | None = None,
                          min_run_time: float = 0.2) -> Measurement:  # fmt: skip
        """Blocks of runs (each block at least ~2.5 ms) until ``min_run_time`` seconds have been spent."""
        number = self._block_size()
        times: list[float] = []
        while sum(times) < min_run_time or not times:
            t = self._run(number)
            times.append(t)
            if callback is not None:
                callback(number, t)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback: Callable[[int, float], None] | None = None) -> Measurement:  # fmt: skip
        """Blocks until the IQR is within ``threshold`` of the median (after ``min_run_time`` and at least 3
        blocks) or ``max_run_time`` seconds have been spent."""
        number = self._block_size(min_run_time / 10)
        times: list[float] = []
        while True:
            t = self._run(number)
            times.append(t)
            if callback is not None:
                callback(number, t)
            m = Measurement(number, times, self._task_spec)
            spent = sum(times)
            if (len(times) > 3 and spent >= min_run_time and m.meets_confidence(threshold)) or spent >= max_run_time:
                return m


class Compare:
    """Measurements side by side: a table per label, a row per sub-label, a column per description."""

    def __init__(self, results: list[Measurement]) -> None:
        self._results = list(results)

    def __str__(self) -> str:
        out = []
        for label in dict.fromkeys(m.task_spec.label for m in self._results):
            group = [m for m in self._results if m.task_spec.label == label]
            unit, scale = select_unit(min(m.median for m in group))
            cols = list(dict.fromkeys(m.task_spec.description or "" for m in group))
            rows = list(dict.fromkeys((m.task_spec.num_threads, m.task_spec.sub_label or "") for m in group))
            cells = {(m.task_spec.num_threads, m.task_spec.sub_label or "", m.task_spec.description or ""):
                     f"{trim_sigfig(m.median / scale, m.significant_figures):g}" for m in group}  # fmt: skip
            width = max([len(r[1]) for r in rows] + [9])
            colw = [max([len(c)] + [len(cells.get((*r, c), "")) for r in rows]) for c in cols]
            head = " " * width + "  |  " + "  |  ".join(c.rjust(w) for c, w in zip(cols, colw, strict=True))
            title = "[" + f" {label or ''} ".center(max(len(head) - 2, 8), "-") + "]"
            out += [title, head]
            threads = None
            for r in rows:
                if r[0] != threads:
                    threads = r[0]
                    out.append(f"{threads} threads: " + "-" * max(len(head) - 12, 4))
                vals = "  |  ".join(cells.get((*r, c), "").rjust(w) for c, w in zip(cols, colw, strict=True))
                out.append(r[1].rjust(width) + "  |  " + vals)
            out += ["", f"Times are in {_UNIT_NAMES[unit]} ({unit}).", ""]
        return "\n".join(out)

    def print(self) -> None:
        """Print the table."""
        print(str(self))


_UNIT_NAMES = {"ns": "nanoseconds", "us": "microseconds", "ms": "milliseconds", "s": "seconds"}
