"""Training machinery: optimizer steps on 10M parameters, DataLoader overhead, Learner overhead.

Ember next to PyTorch in one run. Optimizer rows: steps/s (ratio > 1 beats torch's foreach step).
Overhead rows: the share of an MLP epoch spent in the loader / the Learner (lower is better).
"""

from __future__ import annotations

import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from _common import best_of, table, torch_or_none

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import optim
from ember.data import DataLoader, TensorDataset
from ember.train import Learner


def opt_step(lib: object, name: str, n: int = 10_000_000, **kw: object) -> object:
    chunks = [n // 4] * 4  # a few large tensors, like a real model's
    if lib is ember:
        ps = [nn.Param(ember.randn(c)) for c in chunks]
        for p, c in zip(ps, chunks, strict=True):
            p.grad = ember.randn(c)
        opt = getattr(optim, name)(ps, **kw)
    else:
        ps = [lib.nn.Parameter(lib.randn(c)) for c in chunks]  # type: ignore[attr-defined]
        for p in ps:
            p.grad = lib.randn(p.shape[0])  # type: ignore[attr-defined]
        opt = getattr(lib.optim, name)(ps, foreach=True, **kw)  # type: ignore[attr-defined]
    return opt.step


def mlp_epoch(x: np.ndarray, y: np.ndarray, batch: int) -> tuple[float, float, float]:
    """(hand loop over arrays, hand loop over a DataLoader, Learner.fit) seconds for one epoch."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = optim.SGD(model.parameters(), lr=0.01)

    def step(xb: ember.Tensor, yb: ember.Tensor) -> None:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()

    t0 = time.perf_counter()
    for i in range(0, len(x), batch):
        step(ember.from_numpy(x[i : i + batch]), ember.from_numpy(y[i : i + batch]))
    arrays = time.perf_counter() - t0
    loader = DataLoader(TensorDataset(x, y), batch, shuffle=True, seed=0)
    t0 = time.perf_counter()
    for xb, yb in loader:
        step(xb, yb)
    with_loader = time.perf_counter() - t0
    learner = Learner(model, opt, F.cross_entropy, metrics=["loss"], progress=False)
    t0 = time.perf_counter()
    learner.fit(loader, epochs=1)
    with_learner = time.perf_counter() - t0
    return arrays, with_loader, with_learner


def loader_only(lib_loader: object, n_batches_time: float) -> float:
    t0 = time.perf_counter()
    for _ in lib_loader:  # type: ignore[attr-defined]
        pass
    return (time.perf_counter() - t0) / n_batches_time


def main() -> None:
    torch = torch_or_none()
    rows = []
    for name, kw in (("SGD", {"lr": 0.01, "momentum": 0.9}), ("Adam", {"lr": 1e-3}), ("AdamW", {"lr": 1e-3})):
        e = 1 / best_of(opt_step(ember, name, **kw), repeat=3)
        t = 1 / best_of(opt_step(torch, name, **kw), repeat=3) if torch else float("nan")
        rows.append((f"{name} step, 10M params (steps/s)", e, t))
    table(rows, "(steps/s: ratio > 1 beats torch's foreach implementation)")

    rng = np.random.default_rng(0)
    x = rng.standard_normal((60_000, 784)).astype(np.float32)
    y = rng.integers(0, 10, 60_000)
    arrays, with_loader, with_learner = mlp_epoch(x, y, 128)
    e_loader = loader_only(DataLoader(TensorDataset(x, y), 128, shuffle=True, seed=0), arrays)
    rows = [("DataLoader share of an MLP epoch", e_loader, float("nan"))]
    if torch:
        from torch.utils.data import DataLoader as TorchLoader
        from torch.utils.data import TensorDataset as TorchTensorDataset

        tds = TorchTensorDataset(torch.from_numpy(x), torch.from_numpy(y))
        t0 = time.perf_counter()
        for _ in TorchLoader(tds, 128, shuffle=True):
            pass
        t_loader = time.perf_counter() - t0
        rows[0] = ("DataLoader share of an MLP epoch", e_loader, t_loader / arrays)
    print(f"\nMLP 784-256-10 epoch on 60,000x784, batch 128: hand loop {arrays:.2f}s, "
          f"with DataLoader {with_loader:.2f}s, Learner.fit {with_learner:.2f}s")  # fmt: skip
    rows.append(("Learner overhead over the DataLoader loop", with_learner / with_loader - 1, float("nan")))
    table(rows, "(shares: fraction of the hand-loop epoch time; torch column: torch's DataLoader on the same data)")


if __name__ == "__main__":
    main()
