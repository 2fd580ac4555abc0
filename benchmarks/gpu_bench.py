"""``make bench-gpu``: Ember against PyTorch eager on this machine's GPU, one table of ratios.

Runs ``compare.py``'s protocol (whole processes, default threads, order-alternating pairs, median and
spread) with ``--device cuda`` for each backend that serves CUDA here (torch, CuPy) on: MLP and LeNet-5
training, ResNet-18 CIFAR training (32x32, batch 128), ResNet-18 224x224 inference (batch 1, 8, 64), the
op-overhead chain, a 4096x4096 float32 GEMM, and the mixed-precision variants (float16 autocast, GradScaler).
It uses this Python environment's packages and this checkout's ``src/`` (no network); without a GPU it
says in one line what is missing. ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` are unset for the runs.

    python benchmarks/gpu_bench.py [--pairs K] [--seconds S] [--budget SECONDS] [workloads...]

``--budget`` fits the table into a lent GPU's minutes: no workload starts that would, at the pace of the last
one, end past the budget; the rows not run are named in one line.

``--device cpu`` runs the same table on the CPU (Ember's torch backend), to check the script without a GPU.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(HERE))

WORKLOADS = [
    "mlp_sgd", "lenet5_train", "resnet18_cifar_train", "resnet18_infer_b1", "resnet18_infer_b8", "resnet18_infer_b64",
    "op_overhead_fwdbwd", "gemm_4096", "resnet18_cifar_train_amp", "resnet18_infer_b64_amp",
]  # fmt: skip
#: PyTorch 2.11 eager, float32, on an H100 (the issue's anchors), to read this machine's PyTorch column against
ANCHORS = {
    "mlp_sgd": "93k samples/s", "lenet5_train": "31.7k samples/s", "resnet18_cifar_train": "14.9k samples/s",
    "resnet18_infer_b1": "2.3 ms", "resnet18_infer_b8": "2.3 ms", "resnet18_infer_b64": "3.9 ms",
    "op_overhead_fwdbwd": "22 us/op", "gemm_4096": "51 TFLOP/s",
}  # fmt: skip


def _probe(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    for var in ("EMBER_BACKEND", "EMBER_DEVICE"):
        env.pop(var, None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return "error: " + (out.stderr.strip().splitlines() or ["?"])[-1]
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def missing() -> str | None:
    """What stops the benchmark here (one line), or None."""
    torch = _probe(
        "import torch\nprint('ok' if torch.cuda.is_available() else "
        "f'PyTorch {torch.__version__} sees no CUDA device' + ('' if torch.version.cuda else ' (a CPU-only build)'))"
    )
    if torch != "ok":
        return "PyTorch (the reference) is not installed" if "No module named" in torch else torch
    return None


def ember_backends() -> dict[str, str]:
    """Ember's CUDA-serving backends here -> why not (empty string: usable)."""
    out = {}
    for name in ("torch", "cupy"):
        answer = _probe(
            "import ember\n"
            f"s = ember.backends.available()[{name!r}]\n"
            "print('ok' if any(d.startswith('cuda') for d in s.devices) else (s.reason or 'no CUDA device'))"
        )
        out[name] = "" if answer == "ok" else answer
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workloads", nargs="*", default=WORKLOADS)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: check this script without a GPU")
    p.add_argument("--backends", default="torch,cupy", help="Ember's backends to compare, comma-separated")
    p.add_argument("--compile", action="store_true", help="time Ember's step captured by ember.compile")
    p.add_argument("--budget", type=float, default=0, help="seconds: start no workload that would end past it")
    args = p.parse_args()
    usable = {}
    if args.device == "cuda":
        why = missing()
        if why is not None:
            print(f"bench-gpu: skipped: {why}")
            return 0
        for name, reason in ember_backends().items():
            if reason:
                print(f"bench-gpu: Ember's {name} backend: skipped: {reason}")
            elif name in args.backends.split(","):
                usable[name] = True
    else:
        usable["torch"] = True
    if not usable:
        print("bench-gpu: skipped: no Ember backend serves CUDA here")
        return 0
    # the protocol's environment; and each run's backend and device are its arguments, not an exported
    # EMBER_BACKEND/EMBER_DEVICE (the workloads' setdefault would keep an exported backend over --backend)
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "EMBER_BACKEND", "EMBER_DEVICE"):
        os.environ.pop(var, None)
    os.environ["PYTHONPATH"] = str(SRC) + (
        os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""
    )
    import compare

    cols = list(usable)
    head = f"{'workload':26s} {'unit':>10s} {'PyTorch':>10s} {'H100 anchor':>16s}"
    head += "".join(f" {'Ember/' + b:>12s} {'ratio':>6s} {'spread':>11s}" for b in cols)
    print(head + ("  (Ember compiled: ember.compile, * through a CUDA graph; PyTorch eager)" if args.compile else ""))
    status, start, last = 0, time.monotonic(), 0.0
    for i, name in enumerate(args.workloads):
        began = time.monotonic()
        if args.budget and began - start + last > args.budget:
            print(f"bench-gpu: not run within the {args.budget:g} s budget: {', '.join(args.workloads[i:])}")
            break
        row, torch_values, unit, notes = "", [], "", []
        for b in cols:
            ns = argparse.Namespace(
                backend=b, device=args.device, seconds=args.seconds, threads=0, pairs=args.pairs, compile=args.compile
            )  # compare.py's options (PyTorch's side always runs eagerly)
            try:
                r = compare.compare(name, ns)
            except RuntimeError as e:
                row += f" {'failed':>12s} {'':>6s} {'':>11s}"
                print(f"bench-gpu: {name} on {b}: {str(e).splitlines()[0]}", file=sys.stderr)
                status = 1
                continue
            torch_values.append(r["torch_median"])
            unit = r["unit"]
            spread = f"{r['min_ratio']:.2f}-{r['max_ratio']:.2f}"
            mark = "*" if args.compile and r.get("ember_graphed") else " "
            notes += [f"bench-gpu: {name} on {b}: {n}" for n in dict.fromkeys(
                n for run in r.get("runs", []) for n in run["ember"].get("notes", []))]  # fmt: skip
            row += f" {r['ember_median']:11.4g}{mark} {r['median_ratio']:6.2f} {spread:>11s}"
        # PyTorch runs beside each backend: its median over them all, and a note when it moved between them
        tv = f"{statistics.median(torch_values):10.4g}" if torch_values else f"{'-':>10s}"
        if len(torch_values) > 1 and max(torch_values) > 1.25 * min(torch_values):
            notes.append(f"bench-gpu: {name}: PyTorch's own figure moved between the backends' runs: "
                         + ", ".join(f"{b} {v:.4g}" for b, v in zip(cols, torch_values, strict=False)))  # fmt: skip
        print(f"{name:26s} {unit:>10s} {tv} {ANCHORS.get(name, '-'):>16s}{row}", flush=True)
        for n in notes:  # e.g. why ember.compile ran a step without a CUDA graph
            print(n, file=sys.stderr, flush=True)
        last = time.monotonic() - began
    print("ratio = Ember/PyTorch, median of the pairs (above 1 is better for samples/s and TFLOP/s, below 1 for ms)")
    return status


if __name__ == "__main__":
    sys.exit(main())
