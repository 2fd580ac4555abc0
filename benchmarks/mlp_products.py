"""How much of the MLP 784-512-512-10 (batch 128) SGD step is matrix products.

Times the step's eight products alone (three forward, three weight gradients, two input gradients) on NumPy's
BLAS and on torch's, the SGD update alone (torch's ``_fused_sgd_``, what Ember's torch backend calls), and
PyTorch eager's whole step (``benchmarks/workloads/_mlp.py``'s, plain SGD), in one process. Their ratio bounds what
``ember.compile`` can reach on this workload: a step of nothing but these products runs at most
``whole step / products`` times PyTorch's speed, and with the update at most ``whole step / (products + update)``.
Default threads (``--threads N`` to set them; at one thread the clock is the thread's CPU time, else wall time).
Run with ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` unset.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from collections.abc import Callable

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent / "workloads"))

BATCH, DIMS = 128, (784, 512, 512, 10)


def median_us(fn: Callable[[], object], n: int = 200) -> float:
    """Median over 5 rounds of ``n`` calls, in microseconds per call (after 20 warm-up calls)."""
    clock = time.thread_time if torch.get_num_threads() == 1 else time.perf_counter
    for _ in range(20):
        fn()
    rounds = []
    for _ in range(5):
        t = clock()
        for _ in range(n):
            fn()
        rounds.append((clock() - t) / n)
    return sorted(rounds)[2] * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=0)
    threads = p.parse_args().threads
    if threads:
        torch.set_num_threads(threads)
    from _mlp import mlp_step

    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((BATCH, d), dtype=np.float32) for d in DIMS]
    ws = [rng.standard_normal((DIMS[i + 1], DIMS[i]), dtype=np.float32) for i in range(3)]
    tx, tw = [torch.from_numpy(a) for a in xs], [torch.from_numpy(a) for a in ws]
    tg = [torch.randn(w.shape) for w in tw] + [torch.randn(d) for d in DIMS[1:]]
    tp = [w.clone() for w in tw] + [torch.randn(d) for d in DIMS[1:]]

    def products(x: list, w: list) -> None:
        for i in range(3):
            x[i] @ w[i].T  # forward
            x[i + 1].T @ x[i]  # weight gradient
        for i in (1, 2):
            x[i + 1] @ w[i]  # input gradient

    def update() -> None:
        torch._fused_sgd_(tp, tg, [], weight_decay=0.0, momentum=0.0, lr=0.01, dampening=0.0, nesterov=False,
                          maximize=False, is_first_step=False)  # fmt: skip

    step = mlp_step(argparse.Namespace(framework="torch", device="cpu"), "sgd")
    a, b, u, c = (median_us(f) for f in (lambda: products(xs, ws), lambda: products(tx, tw), update, step))
    print(f"8 products: NumPy {a:.0f} us, torch {b:.0f} us; SGD update {u:.0f} us; PyTorch eager whole step {c:.0f} us "
          f"({torch.get_num_threads()} thr.)")  # fmt: skip
    print(f"bound on a compiled step's speed against PyTorch eager: {c / a:.2f}x (NumPy's BLAS), "
          f"{c / b:.2f}x (torch's); with torch's update {c / (b + u):.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
