"""ONNX signal operators (``DFT``, ``STFT``), ``TensorScatter``, and the small ``ai.onnx.ml`` and
``ai.onnx.preview.training`` operators, as Ember ops.

ONNX keeps complex numbers as a trailing dim of 2 (real, imaginary); so does this module (Ember has no
complex dtype): a DFT is two real matrix products with the cosine and sine tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .. import _creation, ops
from .. import _dtype as dt
from .._tensor import Tensor
from ._dtypes import require_dtype
from ._ops_reduce import ints

__all__ = ["ML_OPS", "OPS", "TRAINING_OPS"]


def _dft_last(re: Tensor, im: Tensor | None, n_out: int, inverse: bool) -> tuple[Tensor, Tensor]:
    """The DFT over the last axis of ``re + i*im`` (length n): the first ``n_out`` frequencies."""
    n = re.shape[-1]
    k = _creation.arange(n_out, dtype=dt.float64, device=re.device)
    t = _creation.arange(n, dtype=dt.float64, device=re.device)
    theta = (2 * math.pi / n) * ops.outer(t, k)
    cos, sin = ops.cos(theta).to(re.dtype), ops.sin(theta).to(re.dtype)
    sign = 1.0 if inverse else -1.0
    out_re = ops.matmul(re, cos)
    out_im = ops.matmul(re, sin) * sign
    if im is not None:
        out_re = out_re - sign * ops.matmul(im, sin)
        out_im = out_im + ops.matmul(im, cos)
    if inverse:
        out_re, out_im = out_re / n, out_im / n
    return out_re, out_im


def dft(a: Any, x: Tensor, length: Any = None, axis: Any = None) -> Tensor:
    ax = (ints(axis)[0] if axis is not None else -2) if a.opset >= 20 else a.get("axis", 1)
    ax %= x.ndim
    if ax == x.ndim - 1:
        raise ValueError("DFT: the signal axis cannot be the last one (it holds real/imaginary parts)")
    inverse, onesided = bool(a.get("inverse", 0)), bool(a.get("onesided", 0))
    re = x[..., 0].movedim(ax, -1)
    im = x[..., 1].movedim(ax, -1) if x.shape[-1] == 2 else None
    if inverse and onesided:  # the inverse of a one-sided spectrum: a real signal of length n
        n = ints(length)[0] if length is not None else 2 * (re.shape[-1] - 1)
        mirror = _creation.tensor([n - k for k in range(n // 2 + 1, n)], dtype=dt.int64, device=x.device)
        keep = ops.narrow(re, -1, 0, n // 2 + 1)
        full_re = ops.cat([keep, ops.index_select(re, -1, mirror)], -1)
        full_im = None
        if im is not None:  # Hermitian: X[n - k] = conj(X[k])
            full_im = ops.cat([ops.narrow(im, -1, 0, n // 2 + 1), -ops.index_select(im, -1, mirror)], -1)
        out_re, _ = _dft_last(full_re, full_im, n, True)
        return out_re.movedim(-1, ax).unsqueeze(-1)
    n = ints(length)[0] if length is not None else re.shape[-1]
    if n != re.shape[-1]:  # zero-pad or truncate the signal to the DFT length
        pad = n - re.shape[-1]
        re = ops.pad(re, (0, pad)) if pad > 0 else ops.narrow(re, -1, 0, n)
        im = None if im is None else (ops.pad(im, (0, pad)) if pad > 0 else ops.narrow(im, -1, 0, n))
    out_re, out_im = _dft_last(re, im, n // 2 + 1 if onesided else n, inverse)
    return ops.stack([out_re.movedim(-1, ax), out_im.movedim(-1, ax)], -1)


def stft(a: Any, x: Tensor, step: Tensor, window: Any = None, length: Any = None) -> Tensor:
    hop = ints(step)[0]
    frame = ints(length)[0] if length is not None else window.shape[0]
    n_frames = (x.shape[1] - frame) // hop + 1
    idx = (_creation.arange(n_frames, device=x.device).reshape(-1, 1) * hop
           + _creation.arange(frame, device=x.device).reshape(1, -1)).reshape(-1)  # fmt: skip
    frames = ops.index_select(x, 1, idx).reshape(x.shape[0], n_frames, frame, x.shape[2])
    if window is not None:
        frames = frames * window.to(x.dtype).reshape(1, 1, frame, 1)
    re = frames[..., 0]
    im = frames[..., 1] if x.shape[2] == 2 else None
    onesided = bool(a.get("onesided", 1)) and im is None
    out_re, out_im = _dft_last(re, im, frame // 2 + 1 if onesided else frame, False)
    return ops.stack([out_re, out_im], -1)


def tensor_scatter(a: Any, cache: Tensor, update: Tensor, where: Any = None) -> Tensor:
    axis = a.get("axis", -2) % cache.ndim
    size, n = cache.shape[axis], update.shape[axis]
    starts = ints(where) if where is not None else [0] * cache.shape[0]
    rows = []
    for b, s in enumerate(starts):
        pos = [(s + j) % size if a.get("mode", "linear") == "circular" else s + j for j in range(n)]
        idx = _creation.tensor(pos, dtype=dt.int64, device=cache.device)
        shape = [1] * (cache.ndim - 1)
        shape[axis - 1] = n
        full = idx.reshape(shape).expand(*update.shape[1:])
        rows.append(ops.scatter(cache[b], axis - 1, full, update[b]))
    return ops.stack(rows)


# -- ai.onnx.preview.training -------------------------------------------------------------------------
def _groups(xs: tuple[Tensor, ...], k: int) -> list[tuple[Tensor, ...]]:
    n = len(xs) // k
    return [xs[i * n : (i + 1) * n] for i in range(k)]


def adagrad(a: Any, r: Tensor, t: Tensor, *xs: Tensor) -> tuple[Tensor, ...]:
    x, g, h = _groups(xs, 3)
    rate = r / (1 + t.to(r.dtype) * a.get("decay_factor", 0.0))
    norm, eps = a.get("norm_coefficient", 0.0), a.get("epsilon", 1e-6)
    new_x, new_h = [], []
    for xi, gi, hi in zip(x, g, h):
        gr = norm * xi + gi
        hn = hi + gr * gr
        new_x.append(xi - rate * gr / (ops.sqrt(hn) + eps))
        new_h.append(hn)
    return (*new_x, *new_h)


def momentum(a: Any, r: Tensor, t: Tensor, *xs: Tensor) -> tuple[Tensor, ...]:
    x, g, v = _groups(xs, 3)
    alpha, beta, norm = a["alpha"], a["beta"], a["norm_coefficient"]
    b = beta if int(t.item()) > 0 else 1.0
    new_x, new_v = [], []
    for xi, gi, vi in zip(x, g, v):
        gr = norm * xi + gi
        vn = alpha * vi + b * gr
        new_x.append(xi - r * (gr + alpha * vn) if a["mode"] == "nesterov" else xi - r * vn)
        new_v.append(vn)
    return (*new_x, *new_v)


def adam(a: Any, r: Tensor, t: Tensor, *xs: Tensor) -> tuple[Tensor, ...]:
    x, g, v, h = _groups(xs, 4)
    alpha, beta, eps = a.get("alpha", 0.9), a.get("beta", 0.999), a.get("epsilon", 1e-6)
    norm, post = a.get("norm_coefficient", 0.0), a.get("norm_coefficient_post", 0.0)
    step = int(t.item())
    rate = r * math.sqrt(1 - beta**step) / (1 - alpha**step) if step > 0 else r
    out_x, out_v, out_h = [], [], []
    for xi, gi, vi, hi in zip(x, g, v, h):
        gr = norm * xi + gi
        vn = alpha * vi + (1 - alpha) * gr
        hn = beta * hi + (1 - beta) * gr * gr
        xn = xi - rate * vn / (ops.sqrt(hn) + eps)
        out_x.append((1 - post) * xn)
        out_v.append(vn)
        out_h.append(hn)
    return (*out_x, *out_v, *out_h)


def mel_weight_matrix(a: Any, bins: Tensor, length: Tensor, rate: Tensor, low: Tensor, high: Tensor) -> Tensor:
    """Triangular mel filters, ``(length // 2 + 1, bins)`` (a table computed from the five scalars)."""
    n_mel, n_dft, sr = int(bins.item()), int(length.item()), int(rate.item())
    lo = 2595 * math.log1p(float(low.item()) / 700) / math.log(10)
    hi = 2595 * math.log1p(float(high.item()) / 700) / math.log(10)
    step = (hi - lo) / (n_mel + 2)
    edges = [int(((n_dft + 1) * (700 * math.expm1((k * step + lo) / 2595 * math.log(10)))) // sr)
             for k in range(n_mel + 2)]  # fmt: skip
    table = [[0.0] * n_mel for _ in range(n_dft // 2 + 1)]
    for i in range(n_mel):
        left, center, right = edges[i : i + 3]
        if center == left:
            table[center][i] = 1.0
        for j in range(left, center + 1) if center != left else ():
            table[j][i] = (j - left) / (center - left)
        for j in range(center, right) if right > center else ():
            table[j][i] = (right - j) / (right - center)
    out = require_dtype(a["output_datatype"], a.name) if "output_datatype" in a else dt.float32
    return _creation.tensor(table, dtype=out, device=bins.device)


def tfidf_vectorizer(a: Any, x: Tensor) -> Tensor:
    """N-gram counts (TF), their weights (IDF) or both (TFIDF) over a pool of integer n-grams (host code)."""
    pool, starts, where = list(a.get("pool_int64s", [])), list(a["ngram_counts"]), list(a["ngram_indexes"])
    lo, hi, skips = a["min_gram_length"], a["max_gram_length"], a["max_skip_count"]
    weights = list(a.get("weights") or [1.0] * len(where))
    table: dict[tuple[int, ...], int] = {}
    k = 0
    for g, start in enumerate(starts, start=1):
        end = starts[g] if g < len(starts) else len(pool)
        for i in range(start, end, g):
            table[tuple(pool[i : i + g])] = k
            k += 1
    size = max(where) + 1
    rows = x.reshape(1, -1).tolist() if x.ndim == 1 else x.tolist()
    out = []
    for row in rows:
        counts = [0.0] * size
        for g in range(lo, hi + 1):
            for skip in range(skips + 1) if g > 1 else (0,):
                step = skip + 1
                for i in range(len(row) - (g - 1) * step):
                    j = table.get(tuple(row[i : i + (g - 1) * step + 1 : step]))
                    if j is not None:
                        counts[where[j]] += 1
        mode = a.get("mode", "TF")
        if mode != "TF":
            w = [0.0] * size
            for j, idx in enumerate(where):
                w[idx] = weights[j]
            counts = [(c * w[i] if mode == "TFIDF" else (w[i] if c > 0 else 0.0)) for i, c in enumerate(counts)]
        out.append(counts)
    result = _creation.tensor(out, dtype=dt.float32, device=x.device)
    return result.reshape(-1) if x.ndim == 1 else result


def bitcast(a: Any, x: Tensor) -> Tensor:
    """The same bytes read as another type of the same width (``Tensor.view(dtype)``)."""
    return x.view(require_dtype(a["to"], f"{a.name}: BitCast to"))


OPS: dict[str, Callable[..., Any]] = {
    "DFT": dft, "STFT": stft, "TensorScatter": tensor_scatter, "BitCast": bitcast,
    "MelWeightMatrix": mel_weight_matrix, "TfIdfVectorizer": tfidf_vectorizer,
}  # fmt: skip

TRAINING_OPS: dict[str, Callable[..., Any]] = {"Adagrad": adagrad, "Momentum": momentum, "Adam": adam}

ML_OPS: dict[str, Callable[..., Any]] = {
    "Binarizer": lambda a, x: (x > a.get("threshold", 0.0)).to(x.dtype),
    "ArrayFeatureExtractor": lambda a, x, idx: ops.index_select(x, x.ndim - 1, idx.reshape(-1).long()),
}
