"""Core overhead benchmarks, Ember next to PyTorch in one run.

(a) per-op overhead: a chain of 1,000 elementwise ops (add, mul, tanh) on a shape-(8,) tensor,
    forward and forward+backward, microseconds per op;
(b) MLP 784-512-512-10, batch 128, one SGD step, samples/s.
"""

from __future__ import annotations

import itertools
import pathlib
import sys
from collections.abc import Callable

import numpy as np

import ember
import ember.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from _common import best_of


def chain_ember(backward: bool) -> Callable[[], object]:
    x = ember.randn(8, requires_grad=backward)

    def run() -> object:
        y = x
        for _ in range(333):
            y = (y + 1.0) * 0.5
            y = y.tanh()
        if backward:
            y.sum().backward()
        return y

    return run


def chain_torch(torch, backward: bool) -> Callable[[], object]:
    x = torch.randn(8, requires_grad=backward)

    def run() -> object:
        y = x
        for _ in range(333):
            y = (y + 1.0) * 0.5
            y = y.tanh()
        if backward:
            y.sum().backward()
        return y

    return run


def mlp_ember() -> Callable[[], object]:
    ember.manual_seed(0)
    sizes = [784, 512, 512, 10]
    ws = [(ember.randn(a, b) * (1 / a) ** 0.5).requires_grad_() for a, b in itertools.pairwise(sizes)]
    bs = [ember.zeros(b, requires_grad=True) for b in sizes[1:]]
    x = ember.randn(128, 784)
    y = ember.randint(0, 10, (128,))

    def step() -> object:
        h = x
        for i, (w, b) in enumerate(zip(ws, bs)):
            h = h @ w + b
            if i < len(ws) - 1:
                h = h.relu()
        loss = F.cross_entropy(h, y)
        for p in ws + bs:
            p.grad = None
        loss.backward()
        with ember.no_grad():
            for p in ws + bs:
                p -= 0.01 * p.grad
        return loss

    return step


def mlp_torch(torch) -> Callable[[], object]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(128, 784)
    y = torch.randint(0, 10, (128,))

    def step() -> object:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def main() -> None:
    try:
        import torch

        torch.set_num_threads(2)
    except ImportError:
        torch = None
    rows = []
    n_ops = 999
    for backward in (False, True):
        label = "chain fwd+bwd" if backward else "chain fwd"
        e = best_of(chain_ember(backward)) / n_ops * 1e6
        t = best_of(chain_torch(torch, backward)) / n_ops * 1e6 if torch else float("nan")
        rows.append((f"{label} (us/op)", e, t, e / t))
    e = 128 / best_of(mlp_ember(), repeat=5, number=10)
    t = 128 / best_of(mlp_torch(torch), repeat=5, number=10) if torch else float("nan")
    rows.append(("MLP SGD step (samples/s)", e, t, e / t))
    print(f"{'benchmark':28s} {'ember':>12s} {'torch':>12s} {'ember/torch':>12s}")
    for name, e, t, r in rows:
        print(f"{name:28s} {e:12.2f} {t:12.2f} {r:12.2f}")
    print("(us/op: lower is better, ratio < 1 beats torch; samples/s: higher is better, ratio > 1 beats torch)")
    _ = np


if __name__ == "__main__":
    main()
