"""How much of the MLP 784-512-512-10 (batch 128) SGD step is matrix products.

Times the step's eight products alone (three forward, three weight gradients, two input gradients) on NumPy's
BLAS and on torch's, and PyTorch eager's whole step, in one process at default threads. Their ratio bounds what
``ember.compile`` can reach on this workload: a step of nothing but these products runs at most
``whole step / products`` times PyTorch's speed. Run with ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` unset.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch

BATCH, DIMS = 128, (784, 512, 512, 10)


def median_us(fn: Callable[[], object], n: int = 200) -> float:
    """Median over 5 rounds of ``n`` calls, in microseconds per call (after 20 warm-up calls)."""
    for _ in range(20):
        fn()
    rounds = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - t) / n)
    return sorted(rounds)[2] * 1e6


def main() -> None:
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((BATCH, d), dtype=np.float32) for d in DIMS]
    ws = [rng.standard_normal((DIMS[i + 1], DIMS[i]), dtype=np.float32) for i in range(3)]
    tx, tw = [torch.from_numpy(a) for a in xs], [torch.from_numpy(a) for a in ws]

    def products(x: list, w: list) -> None:
        for i in range(3):
            x[i] @ w[i].T  # forward
            x[i + 1].T @ x[i]  # weight gradient
        for i in (1, 2):
            x[i + 1] @ w[i]  # input gradient

    model = torch.nn.Sequential(
        torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(BATCH, 784), torch.randint(0, 10, (BATCH,))

    def step() -> None:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    a, b, c = median_us(lambda: products(xs, ws)), median_us(lambda: products(tx, tw)), median_us(step)
    print(f"8 products: NumPy {a:.0f} us, torch {b:.0f} us; PyTorch eager whole step {c:.0f} us")
    print(
        f"bound on a compiled step's speed against PyTorch eager: {c / a:.2f}x (NumPy's BLAS), {c / b:.2f}x (torch's)"
    )


if __name__ == "__main__":
    main()
