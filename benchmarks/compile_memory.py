"""Memory of one training step, eager against its replayed ``ember.compile`` program (NumPy backend).

    python benchmarks/compile_memory.py

For each workload and mode it runs one process: it builds the step (the model, its batch), warms it up (the
compiled one past its capture and checked replay), then measures with ``tracemalloc`` (NumPy reports its array
buffers to it) the peak of all memory allocated in the process during a step, median of 5 steps. Eager's
scratch pool (convolution columns) is counted, as it stays allocated between steps.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent / "workloads"))

import ember


def _steps(name: str) -> Any:
    from _mlp import mlp_step  # type: ignore[import-not-found]
    from lenet5_train import lenet_step  # type: ignore[import-not-found]

    args = argparse.Namespace(framework="ember", backend="numpy", device="cpu", seconds=1.0)
    return mlp_step(args, "sgd") if name == "mlp_sgd" else lenet_step(args)


def _peak(step: Any) -> float:
    peaks = []
    for _ in range(5):
        tracemalloc.reset_peak()
        step()
        peaks.append(tracemalloc.get_traced_memory()[1] / 2**20)
    return statistics.median(peaks)


def one(name: str, compiled: bool) -> float:
    tracemalloc.start()
    step = _steps(name)
    if compiled:
        step = ember.compile(step)
    for _ in range(4):
        step()
    assert not compiled or step.stats["replays"] >= 1, step.reason
    return _peak(step)


def main() -> None:
    if len(sys.argv) == 3:
        print(json.dumps(one(sys.argv[1], sys.argv[2] == "compiled")))
        return
    print(f"{'workload':12s} {'eager MB':>9s} {'replay MB':>10s}  (peak memory allocated in the process during a step)")
    for name in ("mlp_sgd", "lenet5_train"):
        res = []
        for mode in ("eager", "compiled"):
            proc = subprocess.run([sys.executable, __file__, name, mode], capture_output=True, text=True, check=True)
            res.append(float(proc.stdout.strip().splitlines()[-1]))
        print(f"{name:12s} {res[0]:9.2f} {res[1]:10.2f}", flush=True)


if __name__ == "__main__":
    main()
