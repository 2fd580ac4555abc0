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


def _labels(output: Tensor, target: Any) -> Tensor:
    """Class indices: the target itself, or its argmax for one-hot/probability targets (on its device)."""
    t = target if isinstance(target, Tensor) else Tensor(np.asarray(target), device=output.device)
    return t.argmax(-1) if t.ndim > 1 and t.dtype.is_floating_point else t


class TopKAccuracy(Metric):
    """Fraction of samples whose target is among the ``k`` highest outputs.

    The hits are counted on the outputs' device and read back once, in ``compute`` (no host sync per batch).
    """

    def __init__(self, k: int = 5) -> None:
        self.k = k
        self.name = f"top{k}_accuracy" if k != 1 else "accuracy"

    def reset(self) -> None:
        self.correct: Any = 0
        self.n = 0

    def update(self, output: Any, target: Any, loss: float, batch_size: int, learner: Any) -> None:
        out = output.detach()
        t = _labels(out, target.detach() if isinstance(target, Tensor) else target)
        if out.ndim > 2:  # (N, C, ...) -> (N * ..., C)
            out = out.movedim(1, -1).reshape(-1, out.shape[1])
            t = t.reshape(-1)
        if self.k == 1:
            hit = out.argmax(-1) == t
        else:
            hit = (out.topk(min(self.k, out.shape[-1]), -1)[1] == t.unsqueeze(-1)).any(-1)
        self.correct = hit.sum() + self.correct
        self.n += t.numel()

    def compute(self) -> float:
        correct = self.correct.item() if isinstance(self.correct, Tensor) else self.correct
        return float(correct) / max(self.n, 1)


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
