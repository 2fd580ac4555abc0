"""What every workload shares: its command line, the framework import, steady-state timing, the JSON line.

A workload builds one ``step`` callable for the framework asked for, then calls :func:`report`, which
warms up, times rounds of steps and prints the last line the comparison reads (``benchmarks/compare.py``).
Nothing is pinned: threads are whatever the framework picks by default, as a user would see.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any


def parse(name: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=f"benchmark workload {name}")
    p.add_argument("--framework", choices=["ember", "torch"], required=True)
    p.add_argument("--backend", choices=["numpy", "torch", "cupy"], default="numpy", help="Ember's backend")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--seconds", type=float, default=3.0, help="about how long to time the steady state")
    p.add_argument("--compile", action="store_true", help="Ember: time the step captured by ember.compile")
    args = p.parse_args()
    if args.framework == "ember":
        os.environ.setdefault("EMBER_BACKEND", args.backend)
    return args


def framework(args: argparse.Namespace) -> Any:
    """The module to benchmark: ``ember`` or ``torch`` (imported only when asked for)."""
    if args.framework == "torch":
        import torch

        return torch
    import ember

    return ember


def _sync(args: argparse.Namespace) -> None:
    if args.device == "cuda":
        if args.framework == "torch":
            import torch

            torch.cuda.synchronize()
        else:
            import ember

            ember.cuda.synchronize()  # type: ignore[attr-defined]


def _graphed(step: Any) -> bool:
    """Whether a compiled step's program replays through a CUDA graph (``ember.compile`` on torch-CUDA)."""
    from ember._compile._cuda_graph import CudaGraphProgram

    return any(isinstance(e.program, CudaGraphProgram) for e in getattr(step, "cache", []))


def report(
    name: str,
    args: argparse.Namespace,
    step: Callable[[], Any],
    *,
    unit: str,
    per_step: float,
    rounds: int = 7,
    warmup: int = 3,
) -> None:
    """Time ``step`` in the steady state and print the JSON line.

    ``unit`` "samples/s" (or "TFLOP/s"): value = ``per_step`` samples (TFLOP) / median step time; "ms": value
    = median step time in ms divided by ``per_step`` (e.g. per operation). ``warmup``: the fewest warm-up steps
    (a slow step lowers it; the warm-up also runs for up to a second).
    """
    extra: dict[str, Any] = {}
    if args.framework == "ember" and getattr(args, "compile", False):  # capture cost: the first two calls
        import ember

        step = ember.compile(step)
        with warnings.catch_warnings(record=True) as notes:  # why a step ran eagerly or without a CUDA graph
            warnings.simplefilter("always")
            for k in ("first_call_ms", "second_call_ms"):
                t = time.perf_counter()
                step()
                _sync(args)
                extra[k] = (time.perf_counter() - t) * 1e3
        skips = [f"no CUDA graph: {why}" for why in getattr(step, "graph_skips", [])]
        inexact = getattr(step, "stats", {}).get("verified_within_rounding", 0)
        if inexact:  # a GPU kernel with no deterministic form: its check allowed the rounding of reordered sums
            skips.append(f"checked within rounding, not bit for bit: {inexact} tensors")
        extra["notes"] = [str(n.message) for n in notes] + skips
        extra["compiled"] = not step.eager  # type: ignore[attr-defined]
        extra["graphed"] = _graphed(step)
    t0 = time.perf_counter()
    n = 0
    while n < warmup or time.perf_counter() - t0 < min(1.0, args.seconds / 3):  # warm up: caches, allocator, JIT
        step()
        n += 1
    _sync(args)
    per = max(1, int(n / (time.perf_counter() - t0) * args.seconds / rounds))
    faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(per):
            step()
        _sync(args)
        times.append((time.perf_counter() - t) / per)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0) / (rounds * per)
    med = statistics.median(times)
    higher = unit in ("samples/s", "TFLOP/s")
    value = per_step / med if higher else med * 1e3 / per_step
    line = {
        "workload": name,
        "framework": args.framework,
        "backend": args.backend if args.framework == "ember" else "torch",
        "device": args.device,
        "value": value,
        "unit": unit,
        "higher_is_better": higher,
        "rounds": rounds,
        "steps_per_round": per,
        "round_spread": (max(times) - min(times)) / med,
        "minor_faults_per_step": faults,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        **extra,
    }
    print(json.dumps(line))
