"""``ember.utils.benchmark`` against ``torch.utils.benchmark``: the same calls under both libraries give the
same structure (labels, run counts, statistics of given times, units, thread handling); only timings differ."""

from __future__ import annotations

import importlib
import re

import pytest

torch = pytest.importorskip("torch")


def _run(libname: str) -> list[object]:
    lib = importlib.import_module(libname)
    b = importlib.import_module(libname + ".utils.benchmark")
    said: list[object] = []
    x = lib.ones(100)
    t = b.Timer(stmt="x * 2", globals={"x": x}, label="mul", sub_label="100", description="float")
    m = t.timeit(100)
    said += [repr(m).split("\n")[1:3], re.sub(r"[\d.]+ \w?s$", "T", repr(m).split("\n")[3]), repr(m).split("\n")[4]]
    said += [m.number_per_run, len(m.times), m.iqr, m.title, m.stmt, m.description, m.task_spec.num_threads]
    auto = t.blocked_autorange(min_run_time=0.02)
    said += [auto.number_per_run >= 1, len(auto.times) >= 1, sum(auto.raw_times) >= 0.02]
    threads = lib.get_num_threads()
    two = b.Timer("x + 1", globals={"x": x}, num_threads=2).timeit(10)
    said += [two.task_spec.num_threads, lib.get_num_threads() == threads, two.title]
    said += [b.Timer("a = 1\nb = 2").timeit(2).title, b.Timer("pass", sub_label="s").timeit(2).title]
    said += [b.select_unit(2.5e-6), b.select_unit(3e-3), b.select_unit(2.0), b.trim_sigfig(123.456, 2)]
    given = b.Measurement(10, [1e-5, 2e-5, 3e-5, 4e-5, 5e-5], m.task_spec)
    said += [given.median, round(given.mean, 15), round(given.iqr, 12), given.significant_figures, given.has_warnings]
    said += [b.Measurement(100, [2.6e-4], m.task_spec).significant_figures, given.meets_confidence(0.9)]
    steady = b.Measurement(10, [1e-5, 1.0001e-5, 1.0002e-5, 0.9999e-5], m.task_spec)
    said += [steady.significant_figures, steady.has_warnings, "WARNING" in repr(given), "WARNING" in repr(steady)]
    merged = b.Measurement.merge([given, given])
    said += [len(merged), len(merged[0].times), merged[0].number_per_run]
    for bad in (t.autorange, t.repeat):
        with pytest.raises(NotImplementedError, match="blocked_autorange"):
            bad()
    return said


def test_benchmark_matches_torch():
    assert _run("ember") == _run("torch")


def test_compare_tables_group_by_label_threads_and_description():
    from ember.utils import benchmark as b

    def spec(sub, desc, threads=1):
        return b.Timer("pass", label="ops", sub_label=sub, description=desc, num_threads=threads)._task_spec

    ms = [b.Measurement(10, [2.5e-5] * 2, spec("n=10", "mul")), b.Measurement(10, [4e-5] * 2, spec("n=10", "add")),
          b.Measurement(10, [3e-4] * 2, spec("n=1000", "add", 2))]  # fmt: skip
    lines = str(b.Compare(ms)).splitlines()
    assert lines[0].startswith("[") and " ops " in lines[0]
    assert lines[1].split("|")[1:] == ["  mul  ", "  add"]
    assert lines[2].startswith("1 threads:") and lines[4].startswith("2 threads:")
    assert [c.strip() for c in lines[3].split("|")] == ["n=10", "2.5", "4"]
    assert [c.strip() for c in lines[5].split("|")] == ["n=1000", "", "30"]
    assert "Times are in microseconds (us)." in lines
