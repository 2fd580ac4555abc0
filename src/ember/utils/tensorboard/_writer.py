"""``SummaryWriter``: PyTorch's ``torch.utils.tensorboard.SummaryWriter`` API over the ``tensorboard`` package's
event-file writer (TFRecord framing, CRCs and protos are all the package's own)."""

from __future__ import annotations

import os
import socket
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ... import _optional

_optional.require("tensorboard", "ember.utils.tensorboard")

from tensorboard.compat.proto.event_pb2 import Event, SessionLog  # noqa: E402
from tensorboard.summary.writer.event_file_writer import EventFileWriter  # noqa: E402

from . import _summary  # noqa: E402

__all__ = ["SummaryWriter"]


def _default_log_dir(comment: str) -> str:
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")


def _writable_dir(path: str | os.PathLike[str]) -> str:
    """Create ``path`` and check a file can be written there, before any event file is opened."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=p):
            pass
    except OSError as e:
        raise type(e)(e.errno, f"SummaryWriter: cannot write event files in log_dir {str(p)!r} "
                      f"({e.strerror or e}); choose a writable folder") from None  # fmt: skip
    return str(p)


class SummaryWriter:
    """Write TensorBoard event files in ``log_dir`` (default ``runs/DATETIME_HOSTNAME{comment}``).

    The API is PyTorch's: ``add_scalar``, ``add_scalars``, ``add_histogram``, ``add_image``, ``add_images``,
    ``add_figure``, ``add_text``, ``add_hparams``, ``add_pr_curve``, ``flush``, ``close``; values may be Ember
    tensors, NumPy arrays or numbers. ``purge_step`` tells TensorBoard to drop the events at and after that step
    left by an earlier, crashed run in the same folder (resume from a checkpoint). Events are queued and
    written by a background thread every ``flush_secs`` or ``max_queue`` events, and by ``flush``/``close``.
    Usable as a context manager. Needs the ``tensorboard`` package: ``pip install 'ember[tensorboard]'``.
    """

    def __init__(self, log_dir: str | os.PathLike[str] | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:  # fmt: skip
        self.log_dir = _writable_dir(log_dir if log_dir is not None else _default_log_dir(comment))
        self.purge_step = purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, filename_suffix
        self._writer: EventFileWriter | None = self._open(self.log_dir)
        self._children: dict[str, EventFileWriter] = {}
        if purge_step is not None:
            self._writer.add_event(Event(step=purge_step, wall_time=time.time(),
                                         session_log=SessionLog(status=SessionLog.START)))  # fmt: skip

    def _open(self, folder: str) -> EventFileWriter:
        return EventFileWriter(folder, self.max_queue, self.flush_secs, self.filename_suffix)

    def get_logdir(self) -> str:
        """The folder the event files are written to."""
        return self.log_dir

    def _file_writer(self) -> EventFileWriter:
        if self._writer is None:
            raise RuntimeError(f"SummaryWriter: the writer for {self.log_dir!r} is closed")
        return self._writer

    def _add(self, summary: Any, global_step: int | None, walltime: float | None,
             writer: EventFileWriter | None = None) -> None:  # fmt: skip
        event = Event(summary=summary, wall_time=time.time() if walltime is None else walltime)
        if global_step is not None:
            event.step = int(global_step)
        (writer or self._file_writer()).add_event(event)

    # -- data ---------------------------------------------------------------------------------------
    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None, walltime: float | None = None,
                   new_style: bool = False, double_precision: bool = False) -> None:  # fmt: skip
        """One value of the curve ``tag`` at ``global_step``."""
        self._add(_summary.scalar(tag, scalar_value, new_style, double_precision), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: Mapping[str, Any], global_step: int | None = None,
                    walltime: float | None = None) -> None:  # fmt: skip
        """Several curves in one chart: each ``tag`` is a run ``{log_dir}/{main_tag}_{tag}`` with the curve
        ``main_tag`` (as PyTorch does)."""
        self._file_writer()
        walltime = time.time() if walltime is None else walltime
        for tag, value in tag_scalar_dict.items():
            folder = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{tag}")
            if folder not in self._children:
                self._children[folder] = self._open(_writable_dir(folder))
            self._add(_summary.scalar(main_tag, value), global_step, walltime, self._children[folder])

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None, bins: Any = "tensorflow",
                      walltime: float | None = None, max_bins: int | None = None) -> None:  # fmt: skip
        """The distribution of ``values``; ``bins`` is ``"tensorflow"`` or anything ``numpy.histogram`` takes."""
        self._add(_summary.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                  dataformats: str = "CHW") -> None:  # fmt: skip
        """One image: floats in [0, 1] or uint8 in [0, 255], laid out as ``dataformats`` (CHW, HWC, HW, WH)."""
        self._add(_summary.image(tag, _summary.to_hwc(img_tensor, dataformats, "add_image")), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                   dataformats: str = "NCHW") -> None:  # fmt: skip
        """A batch of images (NCHW, NHWC or NHW) shown as one grid."""
        grid = _summary.image_grid(img_tensor, dataformats, "add_images")
        self._add(_summary.image(tag, grid), global_step, walltime)

    def add_figure(self, tag: str, figure: Any, global_step: int | None = None, close: bool = True,
                   walltime: float | None = None) -> None:  # fmt: skip
        """A matplotlib figure (or a list of them, shown as a grid) rendered to an image."""
        figures = list(figure) if isinstance(figure, Sequence) else [figure]
        arrays = [_render(f, close) for f in figures]
        if len(arrays) == 1:
            self._add(_summary.image(tag, arrays[0]), global_step, walltime)
        else:
            self._add(_summary.image(tag, _summary.image_grid(arrays, "NHWC", "add_figure")), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:  # fmt: skip
        """Text (Markdown is rendered) under ``tag``."""
        self._add(_summary.text(tag, text_string), global_step, walltime)

    def add_pr_curve(self, tag: str, labels: Any, predictions: Any, global_step: int | None = None,
                     num_thresholds: int = 127, weights: Any = None, walltime: float | None = None
                     ) -> None:  # fmt: skip
        """A precision-recall curve of ``predictions`` (probabilities in [0, 1]) against binary ``labels``."""
        self._add(_summary.pr_curve(tag, labels, predictions, num_thresholds, weights), global_step, walltime)

    def add_hparams(self, hparam_dict: Mapping[str, Any], metric_dict: Mapping[str, Any],
                    hparam_domain_discrete: Mapping[str, list[Any]] | None = None, run_name: str | None = None,
                    global_step: int | None = None) -> None:  # fmt: skip
        """One session of the HParams dashboard: the hyperparameters and final metrics, written (as PyTorch does)
        in a sub-run ``{log_dir}/{run_name}`` (default: the current time)."""
        experiment, start, end = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        folder = os.path.join(self.log_dir, run_name if run_name is not None else str(time.time()))
        with SummaryWriter(folder) as w:
            for s in (experiment, start, end):
                w._add(s, None, None)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    # -- lifetime -----------------------------------------------------------------------------------
    def flush(self) -> None:
        """Write the queued events to disk."""
        for w in [self._writer, *self._children.values()]:
            if w is not None:
                w.flush()

    def close(self) -> None:
        """Flush and close the event files; the writer cannot be used afterwards (closing twice is fine)."""
        for w in [self._writer, *self._children.values()]:
            if w is not None:
                w.flush()
                w.close()
        self._writer, self._children = None, {}

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SummaryWriter(log_dir={self.log_dir!r})"


def _render(figure: Any, close: bool) -> np.ndarray:
    """A matplotlib figure as an (H, W, 3) uint8 array."""
    canvas = figure.canvas
    if not hasattr(canvas, "buffer_rgba"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        canvas = FigureCanvasAgg(figure)
    canvas.draw()
    rgb = np.asarray(canvas.buffer_rgba())[:, :, :3].copy()
    if close:
        import matplotlib.pyplot as plt

        plt.close(figure)
    return rgb
