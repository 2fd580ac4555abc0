"""``make demo``: train a small MLP on scikit-learn's bundled 8x8 digits with raw tensors.

This is the whole training loop with nothing but ``ember`` tensors and autograd: a forward pass,
cross entropy, ``loss.backward()`` and an SGD update under ``no_grad``.
"""

from __future__ import annotations

import time

import numpy as np

import ember
import ember.nn.functional as F


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    try:
        from sklearn.datasets import load_digits as _load
    except ImportError as e:  # pragma: no cover - the Makefile installs it
        raise SystemExit("the demo needs scikit-learn (pip install 'ember[examples]')") from e
    d = _load()
    return (d.data / 16.0).astype(np.float32), d.target.astype(np.int64)


def main(epochs: int = 30, batch_size: int = 64, lr: float = 0.1, seed: int = 0) -> float:
    ember.manual_seed(seed)
    x, y = load_digits()
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x))
    x, y = x[order], y[order]
    n_train = int(0.8 * len(x))
    xtr, ytr, xte, yte = x[:n_train], y[:n_train], x[n_train:], y[n_train:]

    def init(fan_in: int, fan_out: int) -> tuple[ember.Tensor, ember.Tensor]:
        bound = 1 / np.sqrt(fan_in)
        w = (ember.rand(fan_in, fan_out) * 2 - 1) * bound
        b = (ember.rand(fan_out) * 2 - 1) * bound
        return w.requires_grad_(), b.requires_grad_()

    w1, b1 = init(64, 128)
    w2, b2 = init(128, 10)
    params = [w1, b1, w2, b2]

    def forward(xb: ember.Tensor) -> ember.Tensor:
        return (xb @ w1 + b1).relu() @ w2 + b2

    print(f"digits: {n_train} train / {len(x) - n_train} test samples, MLP 64-128-10, SGD lr={lr}")
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        perm = rng.permutation(n_train)
        total = 0.0
        for i in range(0, n_train, batch_size):
            idx = perm[i : i + batch_size]
            loss = F.cross_entropy(forward(ember.from_numpy(xtr[idx])), ember.from_numpy(ytr[idx]))
            for p in params:
                p.grad = None
            loss.backward()
            with ember.no_grad():
                for p in params:
                    p -= lr * p.grad  # type: ignore[operator]
            total += loss.item() * len(idx)
        if epoch == 1 or epoch % 5 == 0:
            print(f"epoch {epoch:3d}  loss {total / n_train:.4f}")
    with ember.no_grad():
        pred = forward(ember.from_numpy(xte)).argmax(dim=1).numpy()
    acc = float((pred == yte).mean())
    print(f"test accuracy {acc:.2%} in {time.perf_counter() - start:.1f}s")
    return acc


if __name__ == "__main__":
    main()
