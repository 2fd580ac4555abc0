"""The ``Learner``: the training loop with metrics, progress, logs, checkpoints, resume and early stopping."""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from .._tensor import Tensor
from ..autograd._capture import refuse
from ..autograd._grad_mode import no_grad
from ..ops import isfinite
from ..ops._indexing_join import cat
from ..record import Checkpointer
from ._distributed import DistributedRun
from ._precision import Precision
from .callbacks import Callback, EarlyStopping, NonFiniteLossError
from .loggers import Logger, make_logger
from .metrics import Metric, get_metric

__all__ = ["Callback", "EarlyStopping", "Learner", "NonFiniteLossError"]


def _check_optimizer_holds(model: Any, optimizer: Any) -> None:
    """Refuse an optimizer that would train nothing of ``model`` (built on another model's parameters)."""
    groups = getattr(optimizer, "param_groups", None)
    if not hasattr(model, "parameters") or not isinstance(groups, list):
        return
    held = {id(p) for g in groups for p in g["params"]}
    trainable = [p for p in model.parameters() if p.requires_grad]
    if trainable and not any(id(p) in held for p in trainable):
        raise ValueError(f"Learner: the optimizer holds none of the model's {len(trainable)} trainable parameters "
                         "(was it built on another model's parameters, or before the model was replaced?)")  # fmt: skip


def _interactive(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (or a Jupyter kernel's output), where a redrawn bar makes sense."""
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):  # no isatty, or closed
        return False
    return "ipykernel" in sys.modules


def _batch_size(x: Any) -> int:
    if isinstance(x, Tensor):
        return x.shape[0] if x.ndim else 1
    if isinstance(x, (tuple, list)) and x:
        return _batch_size(x[0])
    if isinstance(x, dict) and x:
        return _batch_size(next(iter(x.values())))
    return 1


def _to(x: Any, device: Any) -> Any:
    if device is None:
        return x
    if isinstance(x, Tensor):
        return x.to(device=device)
    if isinstance(x, (tuple, list)):
        return type(x)(_to(v, device) for v in x)
    if isinstance(x, dict):
        return {k: _to(v, device) for k, v in x.items()}
    return x


def _device_of(model: Any) -> Any:
    """The device of the model's first parameter (None for a model without any)."""
    for p in model.parameters():
        return p.device
    return None


def _compiled(fn: Callable[..., Any]) -> Any:
    from .._compile import compile

    return compile(fn)


class Learner:
    """Train ``model`` with ``optimizer`` on ``loss_fn(output, target)``.

    ``fit`` runs epochs over ``train_loader`` (batches ``(input, target)``), evaluates on ``valid_loader``,
    logs ``train_*``/``valid_*`` metrics per epoch with ``loggers`` in ``out_dir`` (``"csv"``: CSV and JSON
    lines, the default; ``"tensorboard"``: event files with metrics, learning rates, gradient norms and weight
    histograms), saves a checkpoint every epoch and the best by ``best_metric`` (with ``checkpoint_dir``),
    resumes with ``resume=True``, and draws the curves at the end (with matplotlib installed). ``precision``
    is Lightning's: ``"32"``, ``"bf16-mixed"`` (forward and loss under ``ember.autocast`` in bfloat16) or
    ``"16-mixed"`` (float16 autocast plus a ``GradScaler``, unscaled before clipping; its state is saved in
    checkpoints).
    """

    def __init__(self, model: Any, optimizer: Any, loss_fn: Callable[[Any, Any], Tensor], scheduler: Any = None,
                 metrics: Sequence[str | Metric] = ("loss", "accuracy"), device: Any = None,
                 checkpoint_dir: str | Path | None = None, out_dir: str | Path | None = None,
                 callbacks: Iterable[Callback] = (), grad_accumulation: int = 1, grad_clip_norm: float | None = None,
                 skip_nonfinite: bool = False, scheduler_interval: str = "epoch", best_metric: str = "valid_loss",
                 keep_last: int = 2, progress: bool = True, plot: bool = True,
                 compile: bool = False, precision: str = "32", loggers: Sequence[str | Logger] | None = None
                 ) -> None:  # fmt: skip
        if grad_accumulation < 1:
            raise ValueError(f"Learner: grad_accumulation must be >= 1, got {grad_accumulation}")
        if scheduler_interval not in ("epoch", "batch"):
            raise ValueError(f"Learner: scheduler_interval must be 'epoch' or 'batch', got {scheduler_interval!r}")
        self.model, self.optimizer, self.loss_fn, self.scheduler = model, optimizer, loss_fn, scheduler
        self.metric_names = list(metrics)
        if "loss" not in [m if isinstance(m, str) else m.name for m in self.metric_names]:
            self.metric_names.insert(0, "loss")
        _check_optimizer_holds(model, optimizer)
        known = [f"{split}_{get_metric(m).name}" for split in ("valid", "train") for m in self.metric_names]
        if best_metric not in known:
            raise ValueError(f"Learner: best_metric {best_metric!r} is not one of the logged metrics {known}")
        self.device = device
        self.callbacks = list(callbacks)
        self.grad_accumulation, self.grad_clip_norm = grad_accumulation, grad_clip_norm
        self.skip_nonfinite, self.scheduler_interval = skip_nonfinite, scheduler_interval
        self.out_dir = Path(out_dir) if out_dir is not None else (Path(checkpoint_dir) if checkpoint_dir else None)
        self.best_metric = best_metric
        mode = "max" if "acc" in best_metric else "min"
        self.checkpointer = (Checkpointer(checkpoint_dir, keep_last=keep_last, metric=best_metric, mode=mode)
                             if checkpoint_dir is not None else None)  # fmt: skip
        self.progress, self.plot = progress, plot
        self.precision, self._amp = precision, Precision(precision)
        names = loggers if loggers is not None else (["csv"] if self.out_dir is not None else [])
        self.loggers = [make_logger(spec, self.out_dir) for spec in names]
        # compile=True: each training step (forward, backward, clipping, update) and each evaluation step is
        # captured once by ember.compile and replayed (the non-finite check becomes one of its guards)
        self._steps = (_compiled(self._train_step), _compiled(self._eval_step)) if compile else None
        self.history: list[dict[str, float]] = []
        self.epoch, self.step, self.stop = 0, 0, False
        #: set by ``fit`` in a process group of 2+ ranks (DDP, sharded loaders, global metrics, rank-0 output)
        self._dist: DistributedRun | None = None
        if device is not None:
            model.to(device=device)

    # -- output ----------------------------------------------------------------------------------------
    def _emit(self, hook: str, *args: Any) -> None:
        """Call ``hook`` on the loggers (rank 0 only: they write files), then on the callbacks that define it."""
        for cb in (*(self.loggers if self.is_main_process else ()), *self.callbacks):
            method = getattr(cb, hook, None)
            if method is not None:
                method(self, *args)

    @property
    def is_main_process(self) -> bool:
        """Whether this process prints and writes (rank 0 of a process group, or the only process)."""
        return self._dist is None or self._dist.is_main

    def log(self, msg: str) -> None:
        if self.progress and self.is_main_process:
            print(msg, flush=True)

    def _bar(self, it: Any, total: int | None, desc: str) -> Any:
        """A tqdm bar on a terminal or in a notebook; in a file or pipe, only the plain per-epoch lines."""
        if not self.progress or not self.is_main_process or not _interactive(sys.stderr):
            return it
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return it
        return tqdm(it, total=total, desc=desc, leave=False, dynamic_ncols=True, file=sys.stderr)

    # -- one batch ---------------------------------------------------------------------------------------
    def _split(self, batch: Any) -> tuple[Any, Any]:
        if isinstance(batch, (tuple, list)) and len(batch) == 2:
            dev = self.device if self.device is not None else _device_of(self.model)  # batches go to the model
            return _to(batch[0], dev), _to(batch[1], dev)
        n = len(batch) if hasattr(batch, "__len__") else "?"
        raise ValueError(f"Learner: batches must be (input, target) pairs; got {type(batch).__name__} of length {n}")

    def _forward(self, x: Any, train: bool = False) -> Any:
        net = self._dist.ddp if train and self._dist is not None and self._dist.ddp is not None else self.model
        return net(*x) if isinstance(x, tuple) else net(x)

    def _scalar_loss(self, loss: Any) -> Tensor:
        if not isinstance(loss, Tensor) or loss.numel() != 1:
            shape = tuple(loss.shape) if isinstance(loss, Tensor) else type(loss).__name__
            raise ValueError(f"Learner: loss_fn must return a single-value tensor, got {shape}; use "
                             "reduction='mean' or 'sum' (reduction='none' gives one loss per sample)")  # fmt: skip
        return loss

    @property
    def scaler(self) -> Any:
        """The ``"16-mixed"`` GradScaler (None before the first training batch and for other precisions)."""
        return self._amp.scaler

    def _autocast(self) -> Any:
        return self._amp.autocast(_device_of(self.model))

    def _backward(self, loss: Tensor) -> None:
        """Backward of this micro-batch's share of the loss (scaled under "16-mixed")."""
        self._amp.backward(loss / self.grad_accumulation if self.grad_accumulation > 1 else loss)

    def _step(self, hooks: bool = True) -> None:
        """Gradient clipping (on unscaled gradients), the callbacks' ``on_before_optimizer_step`` (not in a
        compiled step) and the optimizer step, then zero the gradients."""
        from ..nn.utils import clip_grad_norm_

        norm = self.grad_clip_norm

        def before_step() -> None:
            if norm is not None:
                clip_grad_norm_(self.model.parameters(), norm)
            if hooks:
                self._emit("on_before_optimizer_step")

        self._amp.step(self.optimizer, before_step if norm is not None or hooks else None)
        self.optimizer.zero_grad()

    def _check_loss(self, v: float, where: str) -> bool:
        finite = math.isfinite(v)
        if self._dist is not None and self.skip_nonfinite:  # every rank skips the same batch, or none
            finite = self._dist.all_finite(finite)
        if finite:
            return True
        if self.skip_nonfinite:
            self.log(f"skipping a batch with loss {v} ({where})")
            return False
        raise NonFiniteLossError(f"loss is {v} at epoch {self.epoch}, step {self.step} ({where}); "
                                 "lower the learning rate, clip gradients, or pass skip_nonfinite=True")  # fmt: skip

    def _run_epoch(self, loader: Any, train: bool, metrics: list[Metric]) -> dict[str, float]:
        for m in metrics:
            m.reset()
        self.model.train(train)
        total = len(loader) if hasattr(loader, "__len__") else None
        bar = self._bar(loader, total, f"epoch {self.epoch} {'train' if train else 'valid'}")
        accum = 0
        i = -1
        for i, batch in enumerate(bar):
            x, y = self._split(batch)
            if self._steps is not None:
                update = accum + 1 == self.grad_accumulation or (total is not None and i == total - 1)
                if train:
                    with self._dist.no_sync(update) if self._dist is not None else contextlib.nullcontext():
                        res = self._steps[0](x, y, update)
                else:
                    res = self._steps[1](x, y)
                if res is None:  # a non-finite loss, skipped (skip_nonfinite)
                    self.optimizer.zero_grad()
                    accum = 0
                    continue
                out, loss = res
                if train:
                    accum = 0 if update else accum + 1
                    if update:
                        self.step += 1
                        if self.scheduler is not None and self.scheduler_interval == "batch":
                            self.scheduler.step()
            elif train:
                last = accum + 1 == self.grad_accumulation or (total is not None and i == total - 1)
                with self._dist.no_sync(last) if self._dist is not None else contextlib.nullcontext():
                    with self._autocast():
                        out = self._forward(x, train=True)
                        loss = self._scalar_loss(self.loss_fn(out, y))
                    lv = float(loss.item())  # the Learner's one host sync per batch: the NaN guard and logs read it
                    if not self._check_loss(lv, f"batch {i}"):
                        self.optimizer.zero_grad()
                        accum = 0
                        continue
                    self._backward(loss)
                accum += 1
                if last:
                    self._step()
                    accum = 0
                    self.step += 1
                    if self.scheduler is not None and self.scheduler_interval == "batch":
                        self.scheduler.step()
            else:
                with no_grad(), self._autocast():
                    out = self._forward(x)
                    loss = self._scalar_loss(self.loss_fn(out, y))
            if self._steps is not None or not train:
                lv = float(loss.item())
            n = _batch_size(y)
            for m in metrics:
                m.update(out, y, lv, n, self)
            if train:
                self._emit("on_batch_end", self.step, lv)
            if hasattr(bar, "set_postfix") and i % 5 == 0:
                bar.set_postfix({m.name: f"{m.compute():.4g}" for m in metrics if m.name in ("loss", "accuracy")})
        if i < 0:
            raise ValueError(f"Learner: the {'train' if train else 'valid'} loader yielded no batches (empty dataset, "
                             "or drop_last=True with fewer samples than batch_size)")  # fmt: skip
        if self._dist is not None:
            return self._dist.combine(metrics)
        return {m.name: m.compute() for m in metrics}

    def _train_step(self, x: Any, y: Any, update: bool) -> tuple[Any, Tensor] | None:
        """One training batch as one function (what ``compile=True`` captures): the eager loop's steps."""
        with self._autocast():
            out = self._forward(x, train=True)
            loss = self._scalar_loss(self.loss_fn(out, y))
        if self._dist is not None and self.skip_nonfinite:  # (every step: the ranks agree on skipping a batch)
            refuse("Learner(skip_nonfinite=True) in a process group: the ranks agree on skipping a batch through "
                   "a collective read on the host (not captured)")  # fmt: skip
            if not self._check_loss(float(loss.item()), f"step {self.step}"):
                return None
        elif not bool(isfinite(loss)) and not self._check_loss(float(loss.item()), f"step {self.step}"):
            return None
        self._backward(loss)
        if update:
            self._step(hooks=False)
        return out, loss

    def _eval_step(self, x: Any, y: Any) -> tuple[Any, Tensor]:
        with no_grad(), self._autocast():
            out = self._forward(x)
            return out, self._scalar_loss(self.loss_fn(out, y))

    # -- public API --------------------------------------------------------------------------------------
    def fit(self, train_loader: Any, valid_loader: Any = None, epochs: int = 1, resume: bool = False
            ) -> list[dict[str, float]]:  # fmt: skip
        """Train for ``epochs`` (counting epochs already done when resuming); return the per-epoch history."""
        if type(epochs) is bool or not isinstance(epochs, int) or epochs < 0:
            raise ValueError(f"Learner.fit: epochs must be a non-negative integer, got {epochs!r}")
        start = 1
        self._dist = DistributedRun.start(self._dist)
        if resume:
            if self.checkpointer is None:
                raise ValueError("Learner.fit(resume=True) needs a checkpoint_dir")
            if self._dist is not None:
                info = self._dist.load_latest(self.checkpointer, self.model, self.optimizer, self.scheduler,
                                              self.device)  # fmt: skip
            else:
                info = self.checkpointer.load_latest(self.model, self.optimizer, self.scheduler, self.device)
            if info is None:
                self.log(f"nothing to resume: no checkpoint in {self.checkpointer.directory}; starting at epoch 1")
            else:
                start = int(info["epoch"]) + 1
                self.step = int(info["step"])
                self.history = list((info.get("metadata") or {}).get("history", []))
                self._amp.load_state_dict((info.get("metadata") or {}).get("grad_scaler"))
                if start > epochs:  # one line: the run is already done
                    self.log(f"nothing to resume: the checkpoint already has {info['epoch']} of {epochs} epochs "
                             f"({info['path']}); ask for more epochs to continue")  # fmt: skip
                else:
                    self.log(f"resumed from epoch {info['epoch']} ({info['path']})")
        self.epoch = start - 1
        if self._dist is not None:
            self._dist.wrap(self.model)
            train_loader = self._dist.shard(train_loader, train=True)
            valid_loader = None if valid_loader is None else self._dist.shard(valid_loader, train=False)
        self._emit("on_fit_start")
        self.stop = False
        try:
            for epoch in range(start, epochs + 1):
                self.epoch = epoch
                self._emit("on_epoch_start", epoch)
                t0 = time.perf_counter()
                if hasattr(train_loader, "set_epoch"):
                    train_loader.set_epoch(epoch - 1)
                metrics = [get_metric(m) for m in self.metric_names]
                logs = {"epoch": float(epoch)}
                logs.update({f"train_{k}": v for k, v in self._run_epoch(train_loader, True, metrics).items()})
                if valid_loader is not None:
                    vm = self._eval_metrics()
                    logs.update({f"valid_{k}": v for k, v in self._run_epoch(valid_loader, False, vm).items()})
                logs["lr"] = float(self.optimizer.param_groups[0]["lr"])
                logs["epoch_time"] = time.perf_counter() - t0
                if self.scheduler is not None and self.scheduler_interval == "epoch":
                    if type(self.scheduler).__name__ == "ReduceLROnPlateau":
                        self.scheduler.step(logs.get("valid_loss", logs["train_loss"]))
                    else:
                        self.scheduler.step()
                self.history.append(logs)
                self.log(self._line(logs))
                self._emit("on_epoch_end", epoch, logs)
                if self.checkpointer is not None:
                    self._save(epoch, logs)
                if self.stop:
                    break
        except KeyboardInterrupt:
            if self.checkpointer is not None and self.history:
                path = self._save(self.epoch - 1 if self.history[-1]["epoch"] < self.epoch else self.epoch,
                                  self.history[-1])  # fmt: skip
                self.log(f"interrupted: saved {path}; continue with resume=True")
            raise
        self._emit("on_fit_end")
        self._finish()
        return self.history

    def _save(self, epoch: int, logs: dict[str, float]) -> Path | None:
        assert self.checkpointer is not None
        if not self.is_main_process:  # written once, by rank 0
            return None
        return self.checkpointer.save(epoch, self.model, self.optimizer, self.scheduler, step=self.step,
                                      metrics=logs, metadata={"history": self.history,
                                                              "grad_scaler": self._amp.state_dict()})  # fmt: skip

    def evaluate(self, loader: Any) -> dict[str, float]:
        """The metrics over ``loader`` in eval mode, without gradients."""
        return self._run_epoch(loader, False, self._eval_metrics())

    def _eval_metrics(self) -> list[Metric]:
        """The metrics that mean something without training (all but the learning rate)."""
        return [m for m in map(get_metric, self.metric_names) if m.name != "lr"]

    def predict(self, loader: Any) -> Tensor:
        """The model's outputs over ``loader`` (batches may be inputs or (input, target) pairs), concatenated."""
        self.model.eval()
        outs = []
        with no_grad():
            for batch in loader:
                x = batch[0] if isinstance(batch, (tuple, list)) and len(batch) == 2 else batch
                dev = self.device if self.device is not None else _device_of(self.model)
                outs.append(self._forward(_to(x, dev)))
        return cat(outs, 0)

    # -- logs ----------------------------------------------------------------------------------------
    @staticmethod
    def _line(logs: dict[str, float]) -> str:
        parts = [f"epoch {int(logs['epoch'])}"]
        for k, v in logs.items():
            if k != "epoch":
                parts.append(f"{k} {v:.4g}")
        return " | ".join(parts)

    def _finish(self) -> None:
        if not self.history:
            return
        keys = [k for k in self.history[-1] if k not in ("epoch",)]
        width = max(len(k) for k in keys)
        table = ["summary (last epoch / best)"]
        for k in keys:
            vals = [h[k] for h in self.history if k in h]
            best = (min if ("loss" in k or "time" in k) else max)(vals)
            table.append(f"  {k:<{width}}  {vals[-1]:>10.4g}  {best:>10.4g}")
        self.log("\n".join(table))
        if self.plot and self.out_dir is not None and self.is_main_process:
            self._plot()

    def _plot(self) -> None:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            self.log("no plot: matplotlib is not installed (pip install 'ember[plot]')")
            return
        names = sorted({k.split("_", 1)[1] for h in self.history for k in h if k.startswith(("train_", "valid_"))})
        fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4), squeeze=False)
        epochs = [h["epoch"] for h in self.history]
        for ax, name in zip(axes[0], names, strict=True):
            for split in ("train", "valid"):
                k = f"{split}_{name}"
                if any(k in h for h in self.history):
                    ax.plot(epochs, [h.get(k, float("nan")) for h in self.history], marker="o", label=split)
            ax.set_title(name)
            ax.set_xlabel("epoch")
            ax.legend()
        fig.tight_layout()
        assert self.out_dir is not None
        tmp = self.out_dir / ".curves.tmp.png"
        fig.savefig(tmp, dpi=100)
        plt.close(fig)
        tmp.replace(self.out_dir / "curves.png")
