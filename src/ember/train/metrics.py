"""Metrics for the Learner: each accumulates over an epoch (``reset``/``update``/``compute``)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .._tensor import Tensor

__all__ = ["Accuracy", "EpochTime", "LearningRate", "Loss", "Metric", "SamplesPerSecond", "TopKAccuracy",
           "get_metric"]  # fmt: skip


class Metric:
    """A metric: ``update(output, target, loss, batch_size, learner)`` per batch, ``compute()`` per epoch."""

    name = "metric"
    #: "max" when larger is better (accuracy), "min" otherwise (loss); used for best checkpoints
    mode = "max"

    def reset(self) -> None:
        pass

    def update(self, output: Any, target: Any, loss: float, batch_size: int, learner: Any) -> None:
        pass

    def compute(self) -> float:
        raise NotImplementedError


class Loss(Metric):
    name, mode = "loss", "min"

    def reset(self) -> None:
        self.total, self.n = 0.0, 0

    def update(self, output: Any, target: Any, loss: float, batch_size: int, learner: Any) -> None:
        self.total += loss * batch_size
        self.n += batch_size

    def compute(self) -> float:
        return self.total / max(self.n, 1)


def _labels(target: Any) -> np.ndarray:
    t = target.detach().cpu().numpy() if isinstance(target, Tensor) else np.asarray(target)
    return t.argmax(-1) if t.ndim > 1 and t.dtype.kind == "f" else t


class TopKAccuracy(Metric):
    """Fraction of samples whose target is among the ``k`` highest outputs."""

    def __init__(self, k: int = 5) -> None:
        self.k = k
        self.name = f"top{k}_accuracy" if k != 1 else "accuracy"

    def reset(self) -> None:
        self.correct, self.n = 0, 0

    def update(self, output: Any, target: Any, loss: float, batch_size: int, learner: Any) -> None:
        out = output.detach().cpu().numpy()
        t = _labels(target)
        if out.ndim > 2:  # (N, C, ...) -> (N * ..., C)
            out = np.moveaxis(out, 1, -1).reshape(-1, out.shape[1])
            t = t.reshape(-1)
        if self.k == 1:
            hit = out.argmax(-1) == t
        else:
            top = np.argpartition(-out, min(self.k, out.shape[-1] - 1), axis=-1)[:, : self.k]
            hit = (top == t[:, None]).any(-1)
        self.correct += int(hit.sum())
        self.n += len(t)

    def compute(self) -> float:
        return self.correct / max(self.n, 1)


class Accuracy(TopKAccuracy):
    def __init__(self) -> None:
        super().__init__(1)


class LearningRate(Metric):
    name, mode = "lr", "max"

    def reset(self) -> None:
        self.value = float("nan")

    def update(self, output: Any, target: Any, loss: float, batch_size: int, learner: Any) -> None:
        self.value = float(learner.optimizer.param_groups[0]["lr"])

    def compute(self) -> float:
        return self.value


class SamplesPerSecond(Metric):
    name, mode = "samples_per_s", "max"

    def reset(self) -> None:
        self.n, self.start = 0, time.perf_counter()

    def update(self, output: Any, target: Any, loss: float, batch_size: int, learner: Any) -> None:
        self.n += batch_size

    def compute(self) -> float:
        return self.n / max(time.perf_counter() - self.start, 1e-9)


class EpochTime(Metric):
    name, mode = "epoch_time", "min"

    def reset(self) -> None:
        self.start = time.perf_counter()

    def compute(self) -> float:
        return time.perf_counter() - self.start


_BY_NAME = {"loss": Loss, "accuracy": Accuracy, "lr": LearningRate, "samples_per_s": SamplesPerSecond,
            "epoch_time": EpochTime}  # fmt: skip


def get_metric(m: str | Metric) -> Metric:
    """A metric by name (``"loss"``, ``"accuracy"``, ``"top5_accuracy"``, ``"lr"``, ...) or the instance itself."""
    if isinstance(m, Metric):
        return m
    if m in _BY_NAME:
        return _BY_NAME[m]()
    if m.startswith("top") and m.endswith("_accuracy") and m[3:-9].isdigit():
        return TopKAccuracy(int(m[3:-9]))
    raise ValueError(f"unknown metric {m!r}; choose from {sorted(_BY_NAME)} or 'topK_accuracy'")
