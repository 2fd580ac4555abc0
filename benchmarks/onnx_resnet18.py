"""ResNet-18 imported from ONNX: Ember (NumPy and torch backends) vs PyTorch eager vs onnxruntime, and load time.

    python benchmarks/onnx_resnet18.py [--rounds K] [--seconds S] [--threads T] [--batches 1 8]

The model is the plain-torch ResNet-18 of ``workloads/_pnnx_models.py`` exported by ``torch.onnx.export``
(cached in the temp folder). For batch 1 and 8 (224x224) it runs K rounds of four whole processes (Ember
on NumPy, Ember on torch, PyTorch eager, onnxruntime; default threads), the order rotating from round to
round, and prints each one's median ms/batch with its spread, and the median over rounds of its ratio to
PyTorch and to onnxruntime of the same round (with their spread). ``--threads T`` pins every side to T
threads (OMP/OpenBLAS/MKL variables; onnxruntime's intra-op threads): less sensitive to a loaded machine
than the default threads. Then it times ``ember.onnx.load`` of the file (parse + weights, median of 5).
Unset OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE when you run it (they change NumPy's BLAS kernels).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
SIDES = [("ember-numpy", "ember", "numpy"), ("ember-torch", "ember", "torch"), ("torch", "torch", "numpy"),
         ("onnxruntime", "ort", "numpy")]  # fmt: skip


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def run(batch: int, framework: str, backend: str, seconds: float, threads: int) -> float:
    cmd = [sys.executable, str(HERE / "workloads" / f"onnx_resnet18_b{batch}.py"), "--framework", framework,
           "--backend", backend, "--seconds", str(seconds)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "EMBER_BACKEND"}
    if threads:
        env.update({v: str(threads) for v in THREAD_VARS})
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["value"])


def _ratio(ts: list[float], ref: list[float]) -> str:
    r = [a / b for a, b in zip(ts, ref, strict=True)]
    return f"x{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--threads", type=int, default=0, help="threads per process (default: each framework's own)")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8], choices=[1, 8])
    p.add_argument("--no-load", action="store_true", help="skip the load-time measurement")
    args = p.parse_args()
    sys.path.insert(0, str(HERE / "workloads"))
    subprocess.run([sys.executable, str(HERE / "workloads" / "_onnx_bench.py")], check=True, capture_output=True)
    threads = f"{args.threads} thread(s)" if args.threads else "default threads"
    for batch in args.batches:
        times: dict[str, list[float]] = {name: [] for name, _, _ in SIDES}
        for k in range(args.rounds):
            order = SIDES[k % len(SIDES) :] + SIDES[: k % len(SIDES)]
            for name, fw, be in order:
                times[name].append(run(batch, fw, be, args.seconds, args.threads))
        print(f"ResNet-18 224x224 batch {batch}, {threads}: ms/batch, median of {args.rounds} processes (min-max); "
              "ratios: median of the rounds' (min-max)")  # fmt: skip
        for name, ts in times.items():
            ratios = f"{_ratio(ts, times['torch'])} PyTorch   {_ratio(ts, times['onnxruntime'])} onnxruntime"
            print(f"  {name:12s} {statistics.median(ts):8.1f} ({min(ts):.1f}-{max(ts):.1f})   {ratios}")
    if args.no_load:
        return
    from _onnx_bench import PATH

    import ember.onnx

    loads = []
    for _ in range(5):
        t = time.perf_counter()
        ember.onnx.load(PATH)
        loads.append(time.perf_counter() - t)
    print(f"ember.onnx.load({PATH.name}): {statistics.median(loads):.3f} s (median of 5; parse + weights)")


if __name__ == "__main__":
    main()
