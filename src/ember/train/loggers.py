"""The Learner's loggers: ``"csv"`` (``log.csv`` + ``log.jsonl``) and ``"tensorboard"`` (event files).

A logger is a ``Callback``: the Learner runs its loggers before the other callbacks. ``Learner(...,
loggers=["csv", "tensorboard"])`` builds them by name in ``out_dir``; a ``Logger`` instance works too.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..record import atomic_write

if TYPE_CHECKING:
    from .learner import Learner

__all__ = ["CSVLogger", "Logger", "TensorBoardLogger", "make_logger"]


class Logger:
    """Per-epoch logging; the same hooks as a ``Callback`` (``on_fit_start``, ``on_epoch_end``, ...)."""

    def on_fit_start(self, learner: Learner) -> None: ...
    def on_epoch_start(self, learner: Learner, epoch: int) -> None: ...
    def on_before_optimizer_step(self, learner: Learner) -> None: ...
    def on_batch_end(self, learner: Learner, step: int, loss: float) -> None: ...
    def on_epoch_end(self, learner: Learner, epoch: int, logs: dict[str, float]) -> None: ...
    def on_fit_end(self, learner: Learner) -> None: ...


class CSVLogger(Logger):
    """The whole history, rewritten atomically each epoch, as ``log.csv`` and ``log.jsonl`` in ``out_dir``."""

    def __init__(self, out_dir: str | Path) -> None:
        self.out_dir = Path(out_dir)

    def on_epoch_end(self, learner: Learner, epoch: int, logs: dict[str, float]) -> None:
        history = learner.history
        keys = sorted({k for h in history for k in h}, key=lambda k: (k != "epoch", k))
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=keys)
        w.writeheader()
        w.writerows(history)
        atomic_write(self.out_dir / "log.csv", buf.getvalue().encode())
        atomic_write(self.out_dir / "log.jsonl", "".join(json.dumps(h) + "\n" for h in history).encode())


def _tag(key: str) -> str:
    """``train_loss`` -> ``loss/train`` (train and valid curves share a chart); other keys stay."""
    for split in ("train", "valid"):
        if key.startswith(split + "_"):
            return f"{key[len(split) + 1 :]}/{split}"
    return key


class TensorBoardLogger(Logger):
    """TensorBoard event files in ``log_dir``, per epoch: every logged metric (``loss/train``, ``loss/valid``,
    ...), each parameter group's learning rate (``lr/group0``), the mean and largest global gradient norm over the
    epoch's optimizer steps (``grad_norm/mean``, ``grad_norm/max``) and a histogram of every parameter
    (``weights/<name>``). A resumed run purges the events after its checkpoint's epoch."""

    def __init__(self, log_dir: str | Path, histograms: bool = True) -> None:
        from .._optional import require

        require("tensorboard", "Learner(loggers=['tensorboard'])")
        self.log_dir, self.histograms = Path(log_dir), histograms
        self.writer: Any = None
        self._norms: list[float] = []

    def on_fit_start(self, learner: Learner) -> None:
        from ..utils.tensorboard import SummaryWriter

        if self.writer is None:
            self.writer = SummaryWriter(self.log_dir, purge_step=learner.epoch + 1)  # drop a crashed run's tail

    def on_epoch_start(self, learner: Learner, epoch: int) -> None:
        self._norms = []

    def on_before_optimizer_step(self, learner: Learner) -> None:
        grads = [p.grad for p in learner.model.parameters() if p.grad is not None]
        self._norms.append(math.sqrt(sum(float((g.detach().float() ** 2).sum().item()) for g in grads)))

    def on_epoch_end(self, learner: Learner, epoch: int, logs: dict[str, float]) -> None:
        w = self.writer
        for k, v in logs.items():
            if k not in ("epoch", "lr"):
                w.add_scalar(_tag(k), v, epoch)
        for i, group in enumerate(getattr(learner.optimizer, "param_groups", [])):
            w.add_scalar(f"lr/group{i}", float(group["lr"]), epoch)
        if self._norms:
            w.add_scalar("grad_norm/mean", sum(self._norms) / len(self._norms), epoch)
            w.add_scalar("grad_norm/max", max(self._norms), epoch)
        if self.histograms and hasattr(learner.model, "named_parameters"):
            for name, p in learner.model.named_parameters():
                if p.numel():
                    w.add_histogram(f"weights/{name}", p.detach(), epoch)
        w.flush()

    def on_fit_end(self, learner: Learner) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def make_logger(spec: str | Logger, out_dir: Path | None) -> Logger:
    """A logger from its name (``"csv"``, ``"tensorboard"``) writing in ``out_dir``, or ``spec`` itself."""
    if isinstance(spec, Logger):
        return spec
    if spec not in ("csv", "tensorboard"):
        raise ValueError(f"Learner: unknown logger {spec!r}; choose from 'csv', 'tensorboard' (or pass a Logger)")
    if out_dir is None:
        raise ValueError(f"Learner: the {spec!r} logger needs out_dir (or checkpoint_dir) to write in")
    return CSVLogger(out_dir) if spec == "csv" else TensorBoardLogger(out_dir)
