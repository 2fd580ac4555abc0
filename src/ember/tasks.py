"""The runnable examples behind ``ember train EXAMPLE``: each builds its data, model, optimizer and loss."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["TASKS", "Task", "build"]


@dataclasses.dataclass
class Task:
    description: str
    build: Callable[..., dict[str, Any]]
    epochs: int
    batch_size: int
    lr: float
    metrics: tuple[str, ...] = ("loss", "accuracy")
    best_metric: str = "valid_accuracy"


def _limit(ds: Any, limit: int | None) -> Any:
    from .data import Subset

    return Subset(ds, range(min(limit, len(ds)))) if limit else ds


def _linear_regression(batch_size: int, lr: float, seed: int, limit: int | None, data_dir: Any, **_: Any
                       ) -> dict[str, Any]:  # fmt: skip
    import ember.nn as nn

    from .data import DataLoader, TensorDataset
    from .optim import SGD

    rng = np.random.default_rng(seed)
    w, b = np.array([2.0, -3.4, 1.5]), 4.2
    x = rng.standard_normal((limit or 1000, 3)).astype(np.float32)
    y = (x @ w + b + 0.01 * rng.standard_normal(len(x))).astype(np.float32)[:, None]
    n = int(0.8 * len(x))
    model = nn.Linear(3, 1)
    return {"model": model, "optimizer": SGD(model.parameters(), lr=lr), "loss_fn": nn.functional.mse_loss,
            "train": DataLoader(TensorDataset(x[:n], y[:n]), batch_size, shuffle=True, seed=seed),
            "valid": DataLoader(TensorDataset(x[n:], y[n:]), batch_size)}  # fmt: skip


def _digits(kind: str) -> Callable[..., dict[str, Any]]:
    def build(batch_size: int, lr: float, seed: int, limit: int | None, data_dir: Any, epochs: int, **_: Any
              ) -> dict[str, Any]:  # fmt: skip
        import ember.nn as nn

        from .data import DataLoader, digits
        from .models import LeNet5Config, MLPConfig
        from .optim import Adam
        from .optim.lr_scheduler import CosineAnnealingLR

        images = kind == "cnn"
        train, valid = digits(True, seed=0, images=images), digits(False, seed=0, images=images)
        model = LeNet5Config(image_size=8, width=2).init() if images else MLPConfig(64, 10, hidden=(128, 64)).init()
        opt = Adam(model.parameters(), lr=lr)
        return {"model": model, "optimizer": opt, "loss_fn": nn.functional.cross_entropy,
                "scheduler": CosineAnnealingLR(opt, T_max=epochs),
                "train": DataLoader(_limit(train, limit), batch_size, shuffle=True, seed=seed),
                "valid": DataLoader(_limit(valid, limit), 256)}  # fmt: skip

    return build


def _mnist(kind: str) -> Callable[..., dict[str, Any]]:
    def build(batch_size: int, lr: float, seed: int, limit: int | None, data_dir: Any, download: bool = False,
              **_: Any) -> dict[str, Any]:  # fmt: skip
        import ember.nn as nn

        from .data import MNIST, DataLoader
        from .models import LeNet5Config, MLPConfig
        from .optim import Adam

        root = Path(data_dir) if data_dir else Path.home() / ".ember" / "data" / "mnist"
        try:
            train, valid = MNIST(root, True, download), MNIST(root, False, download)
        except FileNotFoundError as e:  # the dataset speaks Python (download=True); here the flag is --download
            raise FileNotFoundError(str(e).replace("pass download=True", "add --download")) from None
        model = LeNet5Config().init() if kind == "cnn" else MLPConfig(784, 10, hidden=(256, 128)).init()
        return {"model": model, "optimizer": Adam(model.parameters(), lr=lr), "loss_fn": nn.functional.cross_entropy,
                "train": DataLoader(_limit(train, limit), batch_size, shuffle=True, seed=seed),
                "valid": DataLoader(_limit(valid, limit), 512)}  # fmt: skip

    return build


TASKS: dict[str, Task] = {
    "linear-regression": Task(
        "least squares on synthetic data", _linear_regression, 20, 32, 0.05, ("loss",), "valid_loss"
    ),
    "digits-mlp": Task("an MLP on the bundled 8x8 handwritten digits", _digits("mlp"), 30, 32, 2e-3),
    "digits-cnn": Task("LeNet-5 on the bundled 8x8 handwritten digits", _digits("cnn"), 30, 32, 3e-3),
    "mnist-mlp": Task("an MLP on MNIST (IDX files in --data-dir)", _mnist("mlp"), 10, 128, 1e-3),
    "mnist-cnn": Task("LeNet-5 on MNIST (IDX files in --data-dir)", _mnist("cnn"), 5, 128, 1e-3),
}


def build(name: str, **kw: Any) -> dict[str, Any]:
    if name not in TASKS:
        raise KeyError(f"unknown example {name!r}; choose from {', '.join(TASKS)}")
    return TASKS[name].build(**kw)
