"""Ember's NumPy backend at several thread settings, one workload, on this machine: which default pays here.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/thread_sweep.py conv_stack_fwdbwd \
        [--kernel 1,8,16] [--blas 1,8,16] [--seconds 1]

Each cell is one whole Ember process with ``EMBER_KERNEL_THREADS`` (Ember's convolution, pooling and row splits;
at most 8 are used) and ``OPENBLAS_NUM_THREADS`` (NumPy's products) set, the cells taken in a shuffled order;
"default" sets neither. PyTorch runs at its default threads before and after the cells, and each cell's ratio is
against the median of those runs (above 1 is better for samples/s, below 1 for ms). On the H100 machine's 16
cores the conv stack ran at 0.09x PyTorch's speed with Ember's defaults (docs/architecture.md, "Which backend
serves the CPU"); this is the run that settles the default for many cores.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys

import compare


def _counts(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workload", choices=compare.available())
    p.add_argument("--kernel", default="1,8", help="EMBER_KERNEL_THREADS values, comma-separated")
    p.add_argument("--blas", default=f"1,{os.cpu_count() or 1}", help="OPENBLAS_NUM_THREADS values")
    p.add_argument("--seconds", type=float, default=1.0)
    args = p.parse_args()
    run = argparse.Namespace(backend="numpy", device="cpu", seconds=args.seconds, compile=False, threads=0)
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "EMBER_KERNEL_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.pop(var, None)
    base = dict(os.environ)
    cells = [("default", "default")] + [(k, b) for k in _counts(args.kernel) for b in _counts(args.blas)]
    order = cells[:]
    random.Random(0).shuffle(order)
    torch_values = [compare.run_one(args.workload, "torch", run)["value"]]
    values, unit = {}, ""
    for k, b in order:
        env = dict(base)
        if k != "default":
            env.update(EMBER_KERNEL_THREADS=k, OPENBLAS_NUM_THREADS=b)
        os.environ.clear()
        os.environ.update(env)
        r = compare.run_one(args.workload, "ember", run)
        values[(k, b)], unit = r["value"], r["unit"]
    os.environ.clear()
    os.environ.update(base)
    torch_values.append(compare.run_one(args.workload, "torch", run)["value"])
    ref = statistics.median(torch_values)
    print(f"{args.workload}: PyTorch {ref:.4g} {unit} at its default threads "
          f"({', '.join(f'{v:.4g}' for v in torch_values)}); {os.cpu_count()} CPUs")  # fmt: skip
    print(f"{'EMBER_KERNEL_THREADS':>20s} {'OPENBLAS_NUM_THREADS':>20s} {'Ember':>10s} {'ratio':>6s}")
    for k, b in cells:
        v = values[(k, b)]
        print(f"{k:>20s} {b:>20s} {v:10.4g} {v / ref:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
