"""``Summary`` protocol buffers for each kind of TensorBoard data, built from the ``tensorboard`` package's protos.

Each function takes plain values (Ember tensors, NumPy arrays, numbers; torch tensors work too) and returns a
``summary_pb2.Summary``; the plugin metadata comes from the ``tensorboard`` plugins' own helpers.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary
from tensorboard.util import tensor_util

__all__ = ["as_array", "histogram", "hparams", "image", "image_grid", "pr_curve", "scalar", "text", "to_hwc"]


def as_array(value: Any, what: str) -> np.ndarray:
    """An Ember tensor, a torch tensor, a NumPy array or a number as a NumPy array (on the host)."""
    if hasattr(value, "detach"):
        value = value.detach()
    if hasattr(value, "cpu"):
        value = value.cpu()
    if hasattr(value, "numpy"):
        value = value.numpy()
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"SummaryWriter.{what}: expected a tensor, an array or a number, got "
                        f"{type(value).__name__} ({e})") from None  # fmt: skip


def _number(value: Any, what: str) -> float:
    a = as_array(value, what)
    if a.size != 1:
        raise ValueError(f"SummaryWriter.{what}: expected a single value, got shape {a.shape}")
    return float(a.reshape(()))


def scalar(tag: str, value: Any, new_style: bool = False, double_precision: bool = False) -> Summary:
    """A scalar: ``simple_value`` (the classic form), or a 0-d tensor with the scalars plugin's metadata."""
    v = _number(value, "add_scalar")
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=v)])
    from tensorboard.plugins.scalar import metadata

    proto = tensor_util.make_tensor_proto(np.array(v, np.float64 if double_precision else np.float32))
    meta = metadata.create_summary_metadata(display_name="", description="")
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=meta)])


def _tensorflow_buckets() -> np.ndarray:
    """TensorFlow's default histogram bucket edges: +-1e-12 growing by 10% to +-1e20, and 0."""
    positive = 1e-12 * 1.1 ** np.arange(int(np.ceil(np.log(1e20 / 1e-12) / np.log(1.1))))
    return np.concatenate([-positive[::-1], [0.0], positive])


def histogram(tag: str, values: Any, bins: Any = "tensorflow", max_bins: int | None = None) -> Summary:
    """A histogram of ``values``: TensorFlow's exponential buckets (``bins="tensorflow"``) or NumPy's ``bins``."""
    a = as_array(values, "add_histogram").astype(np.float64).ravel()
    if a.size == 0:
        raise ValueError(f"SummaryWriter.add_histogram: {tag!r} got no values (an empty tensor)")
    if not np.isfinite(a).all():
        raise ValueError(f"SummaryWriter.add_histogram: {tag!r} holds NaN or infinite values")
    if isinstance(bins, str) and bins == "tensorflow":
        edges = _tensorflow_buckets()
        counts, edges = np.histogram(a, bins=np.concatenate([[-np.inf], edges, [np.inf]]))
        used = np.nonzero(counts)[0]  # drop the empty buckets at both ends, keep those in between
        counts = counts[used[0] : used[-1] + 1]
        limits = edges[used[0] + 1 : used[-1] + 2]
        limits[-1] = min(limits[-1], np.finfo(np.float64).max)
    else:
        counts, edges = np.histogram(a, bins=bins)
        limits = edges[1:]
        if max_bins is not None and len(counts) > max_bins:  # merge runs of neighbours down to max_bins
            starts = np.arange(0, len(counts), -(-len(counts) // max_bins))
            counts = np.add.reduceat(counts, starts)
            limits = limits[np.append(starts[1:], len(limits)) - 1]
    proto = HistogramProto(
        min=float(a.min()),
        max=float(a.max()),
        num=float(a.size),
        sum=float(a.sum()),
        sum_squares=float(a @ a),
        bucket_limit=limits.tolist(),
        bucket=counts.astype(float).tolist(),
    )
    return Summary(value=[Summary.Value(tag=tag, histo=proto)])  # fmt: skip


def to_hwc(img: Any, dataformats: str, what: str) -> np.ndarray:
    """An image in ``dataformats`` layout (``CHW``, ``HWC``, ``HW``, ``WH``) as (H, W, C) uint8, C in 1, 3, 4.

    Floats are taken to be in [0, 1] (scaled by 255 and clipped), as in PyTorch; integers in [0, 255].
    """
    a = as_array(img, what)
    fmt = dataformats.upper()
    if fmt not in ("CHW", "HWC", "HW", "WH") or a.ndim != len(fmt):
        raise ValueError(f"SummaryWriter.{what}: an image of dataformats {dataformats!r} needs "
                         f"{len(fmt)} dimensions ({fmt}); got shape {a.shape}")  # fmt: skip
    if fmt == "WH":
        a = a.T
    if fmt in ("HW", "WH"):
        a = a[:, :, None]
    if fmt == "CHW":
        a = a.transpose(1, 2, 0)
    if a.shape[2] not in (1, 3, 4):
        raise ValueError(f"SummaryWriter.{what}: an image needs 1, 3 or 4 channels; got {a.shape[2]} "
                         f"(shape {a.shape} as HWC; is dataformats={dataformats!r} right?)")  # fmt: skip
    if a.dtype == np.uint8:
        return np.ascontiguousarray(a)
    if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.floating):
        return np.ascontiguousarray((np.clip(a.astype(np.float64), 0, 1) * 255 + 0.5).astype(np.uint8))
    return np.ascontiguousarray(np.clip(a, 0, 255).astype(np.uint8))


def image_grid(images: Any, dataformats: str, what: str) -> np.ndarray:
    """A batch ``NCHW``/``NHWC`` (or ``NHW``) as one (H, W, C) uint8 grid, at most 8 images a row."""
    a = as_array(images, what)
    fmt = dataformats.upper()
    if fmt not in ("NCHW", "NHWC", "NHW") or a.ndim != len(fmt):
        raise ValueError(f"SummaryWriter.{what}: images of dataformats {dataformats!r} need {len(fmt)} dimensions "
                         f"({fmt}); got shape {a.shape}")  # fmt: skip
    if len(a) == 0:
        raise ValueError(f"SummaryWriter.{what}: got an empty batch of images")
    tiles = [to_hwc(x, fmt[1:], what) for x in a]
    n, (h, w, c) = len(tiles), tiles[0].shape
    cols = min(8, n)
    rows = -(-n // cols)
    grid = np.zeros((rows * h, cols * w, c), np.uint8)
    for k, t in enumerate(tiles):
        r, q = divmod(k, cols)
        grid[r * h : (r + 1) * h, q * w : (q + 1) * w] = t
    return grid


def image(tag: str, hwc: np.ndarray) -> Summary:
    """An (H, W, C) uint8 image, PNG-encoded by Pillow."""
    from ..._optional import require

    pil = require("PIL.Image", "SummaryWriter.add_image")
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[hwc.shape[2]]
    buf = io.BytesIO()
    pil.fromarray(hwc[:, :, 0] if mode == "L" else hwc, mode=mode).save(buf, format="PNG")
    h, w, c = hwc.shape
    proto = Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=buf.getvalue())
    return Summary(value=[Summary.Value(tag=tag, image=proto)])


def text(tag: str, text_string: str) -> Summary:
    """Text (Markdown) for the text plugin."""
    from tensorboard.plugins.text import metadata

    meta = metadata.create_summary_metadata(display_name="", description="")
    proto = tensor_util.make_tensor_proto(np.array([str(text_string).encode()], dtype=object))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=proto)])


def pr_curve(tag: str, labels: Any, predictions: Any, num_thresholds: int = 127, weights: Any = None) -> Summary:
    """A precision-recall curve: counts and rates at ``num_thresholds`` thresholds evenly spaced in [0, 1].

    The tensor holds TensorBoard's six rows: true positives, false positives, true negatives, false negatives,
    precision and recall; a prediction counts as positive at threshold ``t`` when it is >= ``t``.
    """
    from tensorboard.plugins.pr_curve import metadata

    if not 2 <= num_thresholds <= 10_000:
        raise ValueError(f"SummaryWriter.add_pr_curve: num_thresholds must be in [2, 10000], got {num_thresholds}")
    y = as_array(labels, "add_pr_curve").ravel().astype(np.float64)
    p = as_array(predictions, "add_pr_curve").ravel().astype(np.float64)
    wt = np.ones_like(p) if weights is None else as_array(weights, "add_pr_curve").ravel().astype(np.float64)
    if not (y.shape == p.shape == wt.shape):
        raise ValueError(f"SummaryWriter.add_pr_curve: labels {y.shape}, predictions {p.shape} and weights "
                         f"{wt.shape} must have the same number of elements")  # fmt: skip
    if p.size and (p.min() < 0 or p.max() > 1):
        raise ValueError(f"SummaryWriter.add_pr_curve: predictions must lie in [0, 1]; got [{p.min()}, {p.max()}]")
    bucket = np.floor(p * (num_thresholds - 1)).astype(np.int64)
    positive = y > 0
    tp_bucket = np.bincount(bucket, weights=wt * positive, minlength=num_thresholds)
    fp_bucket = np.bincount(bucket, weights=wt * ~positive, minlength=num_thresholds)
    tp = np.cumsum(tp_bucket[::-1])[::-1]  # predictions in this bucket or above
    fp = np.cumsum(fp_bucket[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(tp + fp, 1e-7)
    recall = tp / np.maximum(tp + fn, 1e-7)
    data = np.stack([tp, fp, tn, fn, precision, recall]).astype(np.float32)
    meta = metadata.create_summary_metadata(display_name=tag, description="", num_thresholds=num_thresholds)
    return Summary(value=[Summary.Value(tag=tag, metadata=meta, tensor=tensor_util.make_tensor_proto(data))])


def _hparam_value(name: str, v: Any) -> tuple[Any, int]:
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams import api_pb2

    if isinstance(v, bool):
        return struct_pb2.Value(bool_value=v), api_pb2.DATA_TYPE_BOOL
    if isinstance(v, (int, float, np.integer, np.floating)):
        return struct_pb2.Value(number_value=float(v)), api_pb2.DATA_TYPE_FLOAT64
    if isinstance(v, str):
        return struct_pb2.Value(string_value=v), api_pb2.DATA_TYPE_STRING
    if hasattr(v, "numel") and v.numel() == 1:  # a one-element tensor
        return struct_pb2.Value(number_value=_number(v, "add_hparams")), api_pb2.DATA_TYPE_FLOAT64
    raise TypeError(f"SummaryWriter.add_hparams: hyperparameter {name!r} must be a bool, number, string or "
                    f"one-element tensor, got {type(v).__name__}")  # fmt: skip


def hparams(hparam_dict: Mapping[str, Any], metric_dict: Mapping[str, Any],
            hparam_domain_discrete: Mapping[str, list[Any]] | None = None) -> tuple[Any, Any, Any]:  # fmt: skip
    """The HParams plugin's experiment, session-start and session-end summaries for one run."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2

    if not isinstance(hparam_dict, Mapping) or not isinstance(metric_dict, Mapping):
        raise TypeError("SummaryWriter.add_hparams: hparam_dict and metric_dict must be dicts")
    domains = dict(hparam_domain_discrete or {})
    unknown = sorted(set(domains) - set(hparam_dict))
    if unknown:
        raise ValueError(f"SummaryWriter.add_hparams: hparam_domain_discrete names {unknown}, not in hparam_dict")
    start = plugin_data_pb2.SessionStartInfo()
    infos = []
    for name, v in hparam_dict.items():
        value, kind = _hparam_value(name, v)
        start.hparams[name].CopyFrom(value)
        info = api_pb2.HParamInfo(name=name, type=kind)
        if name in domains:
            info.domain_discrete.CopyFrom(struct_pb2.ListValue(values=[_hparam_value(name, d)[0]
                                                                       for d in domains[name]]))  # fmt: skip
        infos.append(info)
    metrics = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k)) for k in metric_dict]
    experiment = api_pb2.Experiment(hparam_infos=infos, metric_infos=metrics)

    def one(tag: str, data: plugin_data_pb2.HParamsPluginData) -> Summary:
        meta = metadata.create_summary_metadata(data)
        return Summary(value=[Summary.Value(tag=tag, metadata=meta, tensor=metadata.NULL_TENSOR)])

    end = plugin_data_pb2.SessionEndInfo(status=api_pb2.STATUS_SUCCESS)
    return (one(metadata.EXPERIMENT_TAG, plugin_data_pb2.HParamsPluginData(experiment=experiment)),
            one(metadata.SESSION_START_INFO_TAG, plugin_data_pb2.HParamsPluginData(session_start_info=start)),
            one(metadata.SESSION_END_INFO_TAG, plugin_data_pb2.HParamsPluginData(session_end_info=end)))  # fmt: skip
