"""Ember against PyTorch, as a user sees it: whole processes, default threads, alternating order.

    python benchmarks/compare.py [workloads...] [--pairs K] [--backend numpy|torch] [--device cpu|cuda]

For each workload (``benchmarks/workloads/<name>.py``) it runs K pairs of processes, Ember and PyTorch,
the order alternating from pair to pair (so a machine that warms or cools, or a neighbour's load, falls
on both), reads each process's last line (one JSON object) and prints the median ratio Ember/PyTorch of
``value`` with its spread (min-max over the pairs). For samples/s a ratio above 1 means Ember is faster;
for ms, below 1 does. ``--json FILE`` also writes every run.

``--compile`` runs Ember's step through ``ember.compile`` (PyTorch stays eager) and prints the capture cost
(first call: the eager run that records; second: the replay checked against eager) and peak memory:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/compare.py --compile \
        op_overhead_fwdbwd mlp_sgd lenet5_train [--backend torch]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
from typing import Any

HERE = pathlib.Path(__file__).parent
WORKLOADS = HERE / "workloads"
DEFAULT = ["mlp_sgd", "mlp_adam", "op_overhead_fwd", "op_overhead_fwdbwd"]
DEFAULT += ["rnn_time_sequence"]  # issue 28: the recurrent workload
DEFAULT += ["gpt_train"]  # issue 28: a small GPT training step
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def available() -> list[str]:
    return sorted(p.stem for p in WORKLOADS.glob("*.py") if not p.stem.startswith("_"))


def run_one(name: str, framework: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, str(WORKLOADS / f"{name}.py"), "--framework", framework]
    cmd += ["--backend", args.backend, "--device", args.device, "--seconds", str(args.seconds)]
    if args.compile:
        cmd.append("--compile")
    env = dict(os.environ)
    if args.threads:  # not the protocol's default: for a loaded machine, or to separate threading from overhead
        env.update({v: str(args.threads) for v in THREAD_VARS})
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{name} ({framework}) failed with exit code {proc.returncode}:\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def compare(name: str, args: argparse.Namespace) -> dict[str, Any]:
    ratios, runs = [], []
    for k in range(args.pairs):
        order = ("ember", "torch") if k % 2 == 0 else ("torch", "ember")
        pair = {fw: run_one(name, fw, args) for fw in order}
        runs.append(pair)
        ratios.append(pair["ember"]["value"] / pair["torch"]["value"])
    first = runs[0]["ember"]
    return {
        "workload": name,
        "unit": first["unit"],
        "higher_is_better": first["higher_is_better"],
        "median_ratio": statistics.median(ratios),
        "min_ratio": min(ratios),
        "max_ratio": max(ratios),
        "ember_median": statistics.median(r["ember"]["value"] for r in runs),
        "torch_median": statistics.median(r["torch"]["value"] for r in runs),
        "ember_faults_per_step": statistics.median(r["ember"].get("minor_faults_per_step", 0.0) for r in runs),
        "torch_faults_per_step": statistics.median(r["torch"].get("minor_faults_per_step", 0.0) for r in runs),
        "ember_peak_rss_mb": max(r["ember"].get("peak_rss_mb", 0.0) for r in runs),
        "torch_peak_rss_mb": max(r["torch"].get("peak_rss_mb", 0.0) for r in runs),
        "pairs": len(runs),
        "ember_first_call_ms": statistics.median(r["ember"].get("first_call_ms", 0.0) for r in runs),
        "ember_second_call_ms": statistics.median(r["ember"].get("second_call_ms", 0.0) for r in runs),
        "ember_graphed": all(r["ember"].get("graphed", False) for r in runs),
        "runs": runs,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workloads", nargs="*", help=f"default: {' '.join(DEFAULT)}; available: {' '.join(available())}")
    p.add_argument("--pairs", type=int, default=5, help="order-alternating (Ember, PyTorch) process pairs")
    p.add_argument("--backend", choices=["numpy", "torch", "cupy"], default="numpy", help="Ember's backend")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--seconds", type=float, default=3.0, help="timed steady state per process")
    p.add_argument("--json", type=pathlib.Path, help="also write every run to this file")
    p.add_argument("--compile", action="store_true", help="Ember's step through ember.compile (PyTorch stays eager)")
    p.add_argument(
        "--threads",
        type=int,
        default=0,
        help="set OMP/OpenBLAS/MKL threads for both frameworks (default: leave them to the frameworks)",
    )
    args = p.parse_args()
    names = args.workloads or DEFAULT
    unknown = [n for n in names if n not in available()]
    if unknown:
        p.error(f"unknown workload(s) {unknown}; available: {available()}")
    if args.pairs < 1:
        p.error("--pairs must be at least 1")
    print(f"{'workload':22s} {'unit':>10s} {'ember':>10s} {'torch':>10s} {'ratio':>7s} {'spread':>13s}  better")
    results = []
    for name in names:
        r = compare(name, args)
        results.append(r)
        better = "higher" if r["higher_is_better"] else "lower"
        spread = f"{r['min_ratio']:.2f}-{r['max_ratio']:.2f}"
        print(
            f"{name:22s} {r['unit']:>10s} {r['ember_median']:10.4g} {r['torch_median']:10.4g} "
            f"{r['median_ratio']:7.2f} {spread:>13s}  {better} (ratio Ember/PyTorch, median of {r['pairs']} pairs)",
            flush=True,
        )
        if args.compile:
            print(f"{'':22s} capture: first call {r['ember_first_call_ms']:.1f} ms, second (checked replay) "
                  f"{r['ember_second_call_ms']:.1f} ms; peak RSS Ember {r['ember_peak_rss_mb']:.0f} MB, "
                  f"PyTorch {r['torch_peak_rss_mb']:.0f} MB", flush=True)  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
