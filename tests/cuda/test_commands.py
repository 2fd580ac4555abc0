"""``make test-cuda`` and ``make bench-gpu`` on a machine without a GPU: one line per backend saying why
they skip, exit status 0; and the one line naming what is missing when a package the suite needs is absent."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys
import threading

import pytest

import ember

ROOT = pathlib.Path(__file__).resolve().parents[2]
NO_GPU = not ember.cuda.is_available()


def _load(path: pathlib.Path) -> object:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=900, env=e)


@pytest.mark.skipif(not NO_GPU, reason="with a GPU, make test-cuda runs the whole suite")
def test_test_cuda_without_a_gpu_is_one_skip_line_per_backend():
    p = _run("tests/cuda/run_suite.py")
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.strip().splitlines()
    assert [ln.split(": ")[:3] for ln in lines] == [["test-cuda", "torch", "skipped"], ["test-cuda", "cupy", "skipped"]]
    assert all(len(ln.split(": skipped: ")[1]) > 10 for ln in lines)  # a reason, not an empty line


def test_test_cuda_runs_the_backends_side_by_side_on_their_share_of_the_cores(monkeypatch, capsys):
    suite = _load(ROOT / "tests" / "cuda" / "run_suite.py")
    monkeypatch.setattr(suite, "why_not", lambda backend: None)
    monkeypatch.setattr(suite, "missing_tools", lambda: [])
    both = threading.Barrier(2, timeout=20)  # broken (an error) unless the two suites run at the same time
    shares = []

    def run(backend, argv, share=1):
        shares.append(share)
        both.wait()
        return 0, f"{backend} passed"

    monkeypatch.setattr(suite, "run", run)
    assert suite.main([]) == 0  # type: ignore[attr-defined]
    assert shares == [2, 2] and capsys.readouterr().out.splitlines() == [
        "test-cuda: torch: torch passed", "test-cuda: cupy: cupy passed"]  # fmt: skip
    monkeypatch.setattr(suite.importlib.util, "find_spec", lambda m, *a: object())  # xdist "installed"
    for cores, share, workers in [(16, 1, 8), (16, 2, 8), (8, 2, 4), (2, 2, 2), (64, 2, 8)]:
        monkeypatch.setattr(suite.os, "cpu_count", lambda c=cores: c)
        cmd = suite._command([], share)  # type: ignore[attr-defined]
        assert cmd[cmd.index("-n") + 1] == str(workers), (cores, share)


@pytest.mark.skipif(not NO_GPU, reason="with a GPU, make bench-gpu runs the benchmarks")
def test_bench_gpu_without_a_gpu_is_one_line():
    p = _run("benchmarks/gpu_bench.py")
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bench-gpu: skipped: "), p.stdout
    assert "CUDA" in lines[0]


def test_test_cuda_names_every_missing_package_in_one_line(monkeypatch, capsys):
    suite = _load(ROOT / "tests" / "cuda" / "run_suite.py")
    monkeypatch.setattr(suite, "why_not", lambda backend: None if backend == "torch" else "no CuPy")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda m, *a: None if m in ("msgpack", "PIL") else real(m, *a))
    ran = []
    monkeypatch.setattr(suite, "run", lambda backend, argv, share=1: ran.append(backend) or (0, "ok"))
    assert suite.main([]) == 2  # type: ignore[attr-defined]
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0] == "test-cuda: cupy: skipped: no CuPy"
    assert len(out) == 2 and "lacks msgpack, pillow" in out[1] and "pip install msgpack pillow" in out[1]
    assert ran == []  # nothing ran half-equipped


def test_test_cuda_runs_each_usable_backend_and_fails_only_on_a_failed_suite(monkeypatch, capsys):
    suite = _load(ROOT / "tests" / "cuda" / "run_suite.py")
    monkeypatch.setattr(suite, "why_not", lambda backend: None)
    monkeypatch.setattr(suite, "missing_tools", lambda: [])
    codes = {"torch": (0, "10 passed"), "cupy": (1, "1 failed, 9 passed")}
    monkeypatch.setattr(suite, "run", lambda backend, argv, share=1: codes[backend])
    assert suite.main([]) == 1  # type: ignore[attr-defined]
    out = capsys.readouterr().out.splitlines()
    assert out == ["test-cuda: torch: 10 passed", "test-cuda: cupy: 1 failed, 9 passed"]
    codes["cupy"] = (5, "no tests ran")  # pytest's "nothing collected" (e.g. a -k that selects nothing) is no failure
    assert suite.main([]) == 0  # type: ignore[attr-defined]


def test_bench_gpu_table_on_the_cpu():
    """The same script and table with ``--device cpu`` (Ember's torch backend), on the cheapest workload:
    the path a GPU machine takes (workload processes, compare.py's pairs, the table), minus the GPU. An exported
    EMBER_BACKEND/EMBER_DEVICE (here: a device this machine lacks) does not leak into the runs."""
    pytest.importorskip("torch")
    # a budget the first workload outlasts: the second does not start, and one line names it
    args = ("--device", "cpu", "--pairs", "1", "--seconds", "0.05", "--budget", "0.5", "op_overhead_fwdbwd", "mlp_sgd")
    p = _run("benchmarks/gpu_bench.py", *args, EMBER_BACKEND="numpy", EMBER_DEVICE="cuda")
    assert p.returncode == 0, p.stdout + p.stderr
    head, row, skipped, foot = p.stdout.strip().splitlines()
    assert skipped == "bench-gpu: not run within the 0.5 s budget: mlp_sgd"
    assert head.split()[:4] == ["workload", "unit", "PyTorch", "H100"] and "Ember/torch" in head
    cells = row.split()
    assert cells[:2] == ["op_overhead_fwdbwd", "ms"] and float(cells[-2]) > 0  # a measured ratio
    assert foot.startswith("ratio = Ember/PyTorch")


def test_thread_sweep_runs_every_cell_beside_pytorch():
    """``benchmarks/thread_sweep.py``: one Ember process per thread setting (and the defaults), PyTorch before and
    after; a row per cell with a measured ratio."""
    pytest.importorskip("torch")
    args = ("op_overhead_fwdbwd", "--kernel", "1,2", "--blas", "1", "--seconds", "0.05")
    p = _run("benchmarks/thread_sweep.py", *args, EMBER_KERNEL_THREADS="5")
    assert p.returncode == 0, p.stdout + p.stderr
    head, columns, *rows = p.stdout.strip().splitlines()
    assert head.startswith("op_overhead_fwdbwd: PyTorch ")
    assert columns.split()[:2] == ["EMBER_KERNEL_THREADS", "OPENBLAS_NUM_THREADS"]
    assert [r.split()[:2] for r in rows] == [["default", "default"], ["1", "1"], ["2", "1"]]
    assert all(float(r.split()[-1]) > 0 for r in rows)
