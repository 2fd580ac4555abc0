"""NumPy versions of the row kernels (layer norm, log-softmax, attention), forward and backward, split by rows
over the kernel threads (``_kernels_threads.parallel_rows``; PyTorch threads the same kernels).

Each is the reference formula of its mixin (``_kernels_attention.py``, ``_kernels_activation.py``) written
into preallocated results part by part: the same NumPy calls on each row, so the same bits as the reference
and as on one thread. Reductions along a row stay whole; the sums over rows (layer norm's weight and bias
gradients) run once over all rows after the parts, never per part. Each function is ``recorded``: ember.compile
records it as one call, and a replay runs it (threads included) again.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ._kernels_threads import parallel_rows, recorded

_vecdot: Callable[..., Any] = np.vecdot


def _rowdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _vecdot(a, b)[..., None]  # type: ignore[no-any-return]


# -- layer norm -------------------------------------------------------------------------------------------
#: elements per block of rows in layer norm's chains of passes, so that a block stays in the cache (L3) from one
#: pass to the next; smaller blocks (16K-64K) paid more in calls than they saved (benchmarks/README.md)
_LN_BLOCK = 1 << 18
#: layer norm's backward runs blocks of ``_LN_BLOCK // 4`` elements: its chain writes three new arrays a block
#: (at (2048, 128) float32, one thread: 0.63 ms against 0.72 at 256K and 0.71 at 16K; the forward's best is 256K)
_LN_BWD_SHARE = 4
#: OpenBLAS runs a matrix-vector product of fewer elements on the calling thread (its interface/gemv.c: 2304 x
#: GEMM_MULTITHREAD_THRESHOLD 4); larger ones wake its threads, which under load waited for a core
_BLAS_ONE_THREAD_MV = 9215


def _blocks(lo: int, hi: int, n: int, share: int = 1) -> Any:
    """``(r0, r1)`` blocks of rows ``lo:hi`` of about ``_LN_BLOCK // share`` elements (rows of ``n``)."""
    step = max(1, _LN_BLOCK // share // n)
    return ((r, min(r + step, hi)) for r in range(lo, hi, step))


def _column_sums(a: np.ndarray, weights: Any = None) -> np.ndarray:
    """``a.sum(0)`` of a 2-d array (``weights``: ``(weights[:, None] * a).sum(0)``). Along short rows NumPy's
    reduction runs an inner loop per row (100 µs at (2048, 128)); here matrix-vector products over fixed chunks of
    rows, each small enough for OpenBLAS's calling thread, then the chunks' sums (59 µs). The chunks do not depend
    on any thread count, nor do the bits."""
    rows, n = a.shape
    k = _BLAS_ONE_THREAD_MV // n
    w = np.ones(rows, a.dtype) if weights is None else weights.reshape(rows)
    if k < 8:  # long rows: NumPy's own reduction is as fast
        return np.sum(a, axis=0) if weights is None else np.sum(a * w[:, None], axis=0)  # type: ignore[no-any-return]
    m = rows // k
    s = np.sum(np.matmul(w[: m * k].reshape(m, 1, k), a[: m * k].reshape(m, k, n))[:, 0], axis=0) if m else None
    if s is None:
        s = np.zeros(n, a.dtype)
    if rows > m * k:
        s += np.matmul(w[m * k :], a[m * k :])
    return s  # type: ignore[no-any-return]


@recorded
def layer_norm(x: np.ndarray, n: int, weight: Any, bias: Any, eps: float) -> tuple[np.ndarray, Any, Any]:
    """``(y, mean, rstd)`` of layer norm over the last ``n`` elements of each row (see ``AttentionKernels``;
    ``x`` float32 or float64, ``weight``/``bias`` None or of ``n`` elements). Block by block of rows: the means
    and the variance of the centred rows (two passes: no cancellation) as dot products along the rows (``vecdot``,
    2x faster than ``np.mean`` along short rows), then ``y``."""
    x2 = x.reshape(-1, n)
    rows = x2.shape[0]
    y, mean, rstd = np.empty(x2.shape, x2.dtype), np.empty((rows, 1), x2.dtype), np.empty((rows, 1), x2.dtype)
    ones = np.ones(n, x2.dtype)
    w = None if weight is None else weight.reshape(n)
    b = None if bias is None else bias.reshape(n)

    def part(lo: int, hi: int) -> None:
        for r0, r1 in _blocks(lo, hi, n):
            xr, yr, mr, sr = x2[r0:r1], y[r0:r1], mean[r0:r1], rstd[r0:r1]
            np.divide(_rowdot(xr, ones), n, out=mr)
            np.subtract(xr, mr, out=yr)
            np.divide(_rowdot(yr, yr), n, out=sr)
            sr += eps
            np.sqrt(sr, out=sr)
            np.divide(1.0, sr, out=sr)
            yr *= sr
            if w is not None:
                yr *= w
            if b is not None:
                yr += b

    parallel_rows(rows, x2.size, part)
    return y.reshape(x.shape), mean, rstd


@recorded
def layer_norm_backward(
    g: np.ndarray, x: np.ndarray, n: int, mean: Any, rstd: Any, weight: Any, need_x: bool, need_w: bool,
    need_b: bool,
) -> tuple[Any, Any, Any]:  # fmt: skip
    """``(gx, gw, gb)`` of :func:`layer_norm` (None where not needed; ``gw``/``gb`` flat, of ``n`` elements):
    ``gx = rstd (g w - a - xc c)`` from the centred rows ``xc = x - mean`` (no cancellation where |mean| >> std),
    with the row means ``a = mean(g w)`` and ``c = rstd^2 mean(g w xc)`` as dot products, block by block of
    rows; then the sums over all rows ``gw = sum(rstd g xc)`` (``rstd`` as the weights of the matrix-vector
    products), ``gb = sum(g)``. Seven passes of broadcasting ufuncs where ``xhat = xc rstd`` took eight."""
    g2, x2 = g.reshape(-1, n), x.reshape(-1, n)
    rows = x2.shape[0]
    w = None if weight is None else weight.reshape(n)
    need_w = need_w and w is not None
    dt = np.result_type(g2, x2) if w is None else np.result_type(g2, x2, w)
    wv = np.ones(n, dt) if w is None else w
    gxs = np.empty(x2.shape, dt) if need_x else None
    gps = np.empty(x2.shape, dt) if need_w else None  # g * xc, summed over the rows (weighted by rstd) after
    rs = np.asarray(rstd, dt).reshape(rows, 1)

    def part(lo: int, hi: int) -> None:
        step = min(hi - lo, max(1, _LN_BLOCK // _LN_BWD_SHARE // n))
        xc_buf = np.empty((step, n), dt)
        for r0, r1 in _blocks(lo, hi, n, _LN_BWD_SHARE):
            gr, sr, xc = g2[r0:r1], rs[r0:r1], xc_buf[: r1 - r0]
            np.subtract(x2[r0:r1], mean[r0:r1], out=xc)
            if gps is not None:
                np.multiply(gr, xc, out=gps[r0:r1])
            if gxs is None:
                continue
            gx = gxs[r0:r1]
            np.multiply(gr, wv, out=gx)
            a = _rowdot(gr, wv)
            c = _rowdot(gx, xc)
            a /= n
            c /= n
            c *= sr
            c *= sr
            xc *= c
            gx -= a
            gx -= xc
            gx *= sr

    if need_x or need_w:
        parallel_rows(rows, x2.size, part)
    gw = None if gps is None else _column_sums(gps, rs)
    gb = _column_sums(g2) if need_b else None
    return (None if gxs is None else gxs.reshape(x.shape)), gw, gb


# -- log-softmax over the last dim ------------------------------------------------------------------------
def _log_tiny(dtype: Any) -> float:
    """``log`` of the dtype's smallest normal number: ``exp`` of anything below it is subnormal (or 0)."""
    return float(np.log(np.finfo(dtype).tiny))


@recorded
def log_softmax(x: np.ndarray) -> np.ndarray:
    """``x - max - log(sum(exp(x - max)))`` along the last dim (at least one element per row). The sum's terms
    are ``exp(max(x - max, log(tiny) + 0.01))``: a term below the smallest normal number (a confident classifier's
    log probabilities, a fresh GPT's tied head: up to 2/3 of them) costs ``exp`` a slow subnormal path (2.0
    against 0.19 ms at (2048, 256) float32), and in a sum of at least 1 (the max's term) it is below the rounding
    either way. The clamp runs only where some row reaches below it."""
    n = x.shape[-1]
    x2 = x.reshape(-1, n)
    z = np.empty(x2.shape, x2.dtype)
    lo = _log_tiny(z.dtype) + 0.01  # (above its float32 rounding, so that exp(lo) is normal)

    def part(lo_row: int, hi: int) -> None:
        zr, xr = z[lo_row:hi], x2[lo_row:hi]
        m = np.max(xr, axis=-1, keepdims=True)
        np.subtract(xr, m, out=zr)
        if np.min(xr) - np.max(m) >= lo:  # no term below the clamp (most steps): skip the pass (same bits)
            e = np.exp(zr)
        else:
            e = np.maximum(zr, lo)
            np.exp(e, out=e)
        zr -= np.log(np.sum(e, axis=-1, keepdims=True))

    parallel_rows(x2.shape[0], x2.size, part)
    return z.reshape(x.shape)


@recorded
def log_softmax_backward(g: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``g - exp(y) * sum(g)`` along the last dim, with results below the dtype's smallest normal number flushed
    to zero. A confident classifier's gradient is mostly such subnormals (``exp`` of a very negative log
    probability, times 1/N): every product they enter then runs 10-100x slower on x86 (a GPT's tied head: 94 ms
    instead of 0.9 ms per GEMM with OpenBLAS, 55 ms with PyTorch's), and they are below float32's resolution of
    any sum they join with a normal number.

    They are not made in the first place: where ``y`` is below ``cut = log(tiny / max|sum(g)|) - 0.01`` the
    term ``exp(y) * sum(g)`` is subnormal or 0 in every row, so ``exp`` runs on ``max(y, cut)`` and those
    terms are set to 0 by a bit mask before the product (``g - 0`` is what the flush gave them: ``g`` is 0
    there, or a number that a subnormal does not move). What remains subnormal (a term just above the cut in a
    row of smaller ``sum(g)``, a subnormal ``g``) is found by the results' bits and flushed as before. At
    (2048, 256) float32 with half the terms below the cut (a fresh GPT's tied head), one thread: 6.7 -> 1.6 ms;
    with none below it (checked by one ``min``), as before."""
    n = y.shape[-1]
    g2, y2 = g.reshape(-1, n), y.reshape(-1, n)
    out = np.empty(g2.shape, np.result_type(g2, y2))
    tiny = np.finfo(out.dtype).tiny
    sums = np.sum(g2, axis=-1, keepdims=True)
    top = float(np.max(np.abs(sums))) if sums.size else 0.0
    cut = _log_tiny(out.dtype) - math.log(top) - 0.01 if 0.0 < top < math.inf and out.dtype == y2.dtype else None
    bits = np.dtype(f"i{out.dtype.itemsize}")
    magnitude = np.array(np.iinfo(bits).max, bits)  # every bit but the sign
    sub = int(np.frombuffer(np.array(tiny, out.dtype).tobytes(), bits)[0]) - 1  # |o|'s bits - 1 below it: subnormal

    def part(lo: int, hi: int) -> None:
        o, s = out[lo:hi], sums[lo:hi]
        if cut is None:  # sum(g) 0 or not finite everywhere, or mixed dtypes: the formula, then the flush
            e = np.exp(y2[lo:hi])
            e *= s
            np.subtract(g2[lo:hi], e, out=o)
            np.putmask(o, np.abs(o, out=e) < tiny, 0.0)
            return
        if np.min(y2[lo:hi]) >= cut:  # nothing below the cut (most steps): no mask (the same bits)
            e = np.exp(y2[lo:hi])
        else:
            e = np.maximum(y2[lo:hi], cut)
            keep = np.subtract(np.less(y2[lo:hi], cut), 1, dtype=bits, casting="unsafe")  # 0 below the cut, else ~0
            np.exp(e, out=e)
            np.bitwise_and(e.view(bits), keep, out=e.view(bits))
        e *= s
        np.subtract(g2[lo:hi], e, out=o)
        mag = np.bitwise_and(o.view(bits), magnitude, out=e.view(bits))  # |o|'s bits: subnormal in [1, tiny's)
        mag -= 1  # (0 wraps to the largest unsigned value)
        small = mag.view(f"u{out.dtype.itemsize}")
        if small.size and small.min() < sub:  # a few, mostly: their places, not a select over every element
            o.reshape(-1)[np.flatnonzero(small < sub)] = 0.0

    parallel_rows(g2.shape[0], g2.size, part)
    return out.reshape(g.shape)


# -- attention, split along the first batch dim -----------------------------------------------------------
def attention_splits(q: Any, k: Any, v: Any, add: Any, keep: Any) -> bool:
    """Whether :func:`attention` serves these operands: NumPy arrays of one floating dtype with a batch dim
    first, whose batch dims (and the mask's) broadcast to q's."""
    if not all(isinstance(a, np.ndarray) for a in (q, k, v)) or q.ndim < 3 or q.dtype.kind != "f":
        return False
    if not (k.dtype == v.dtype == q.dtype) or q.shape[0] < 2:
        return False
    shapes = [k.shape[:-2], v.shape[:-2]] + ([] if add is None else [add.shape[:-2]])
    try:
        batch = np.broadcast_shapes(q.shape[:-2], *shapes)
    except ValueError:
        return False
    masks_fit = (add is None or add.dtype == q.dtype) and (keep is None or keep.shape[:-2] == batch)
    return batch == q.shape[:-2] and masks_fit


def _part_of(a: Any, nd: int, lo: int, hi: int) -> Any:
    """Rows ``lo:hi`` of the first batch dim of ``a`` (or ``a`` itself where it broadcasts along it)."""
    return a[lo:hi] if a is not None and a.ndim == nd and a.shape[0] != 1 else a


#: OpenBLAS runs a product of m*n*k at most this on the calling thread (its interface/gemm.c: SMP_THRESHOLD_MIN
#: 65536 x GEMM_MULTITHREAD_THRESHOLD 4); larger ones on its own threads, and their bits depend on its count
_BLAS_ONE_THREAD_MNK = 1 << 18


def _small_products(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> bool:
    """Whether every per-matrix product of attention stays on one OpenBLAS thread: then the parts make them
    (the same bits as the whole batch's), else they run whole batch on OpenBLAS's threads, between the parts."""
    tq, tk, e, ev = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    return tq * tk * max(e, ev) <= _BLAS_ONE_THREAD_MNK


def _col_sums(a: np.ndarray, ones: np.ndarray) -> np.ndarray:
    """``a.sum(-2)`` of a stack of matrices as one matrix-vector product each (a reduction along short rows'
    columns costs NumPy ~4x more)."""
    return np.matmul(ones, a)[..., None, :]  # type: ignore[no-any-return]


@recorded
def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, add: Any, scale: float, keep: Any,
              c: float) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``(out, probs)`` of ``AttentionKernels.attention`` (``add``: the additive mask or None; ``keep``: the
    dropout's bool mask or None, ``c`` its scale), the softmax split along the first batch dim.

    The scores are made transposed, keys along axis -2 (``k q^T``): the softmax's max and sum then run down the
    columns, where NumPy's reductions along short rows of 64 cost it 3-4x more (the max 664 against 203 µs at
    (32, 4, 64, 64) float32). ``probs`` is returned as the transposed view of that array: the probabilities in
    their usual shape, which :func:`attention_backward` turns back into the contiguous transposed array."""
    nd, b = q.ndim, q.shape[0]
    pt = np.empty((*q.shape[:-2], k.shape[-2], q.shape[-2]), q.dtype)  # probs^T
    out = np.empty((*q.shape[:-1], v.shape[-1]), q.dtype)
    lowest, tiny = np.finfo(q.dtype).min, np.finfo(q.dtype).tiny
    small = _small_products(q, k, v)
    add_t = None if add is None else np.swapaxes(add.reshape((1,) * (2 - add.ndim) + add.shape), -1, -2)
    keep_t = None if keep is None else np.swapaxes(keep, -1, -2)
    ones = np.ones(k.shape[-2], q.dtype)
    dropped = None if keep is None or small else np.empty(pt.shape, q.dtype)
    if not small:
        np.matmul(k, np.swapaxes(q, -1, -2), out=pt)

    def part(lo: int, hi: int) -> None:
        s = pt[lo:hi]
        kr, vr, ar = (_part_of(a, nd, lo, hi) for a in (k, v, add_t))
        if small:
            np.matmul(kr, np.swapaxes(q[lo:hi], -1, -2), out=s)
        s *= scale
        if ar is not None:
            s += ar
        m = np.max(s, axis=-2, keepdims=True)
        if ar is not None:  # a query with every key masked: exp(-inf - finite) = 0, and 0 / tiny = 0
            m = np.maximum(m, lowest)
        s -= m
        np.exp(s, out=s)
        d = _col_sums(s, ones)
        if ar is not None:
            d = np.maximum(d, tiny)
        s /= d
        pd = s
        if keep_t is not None:
            pd = np.multiply(s, keep_t[lo:hi], out=None if dropped is None else dropped[lo:hi])
            pd *= c
        if small:
            np.matmul(np.swapaxes(pd, -1, -2), vr, out=out[lo:hi])

    parallel_rows(b, pt.size, part)
    if not small:
        np.matmul(np.swapaxes(pt if dropped is None else dropped, -1, -2), v, out=out)
    return out, np.swapaxes(pt, -1, -2)


@recorded
def attention_backward(
    g: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray, probs: np.ndarray, keep: Any, scale: float,
    c: float, need: tuple[bool, ...],
) -> tuple[Any, Any, Any, Any]:  # fmt: skip
    """``(gq, gk, gv, gscores)`` of :func:`attention` over q's batch (None where ``need`` is False), in the
    transposed layout of its scores: ``ds^T = p^T (dp^T - colsum(dp^T p^T))`` with ``dp^T = v g^T``."""
    nd, b = q.ndim, q.shape[0]
    batch = q.shape[:-2]
    small = _small_products(q, k, v)
    pt = np.swapaxes(probs, -1, -2)  # contiguous when made by attention()
    keep_t = None if keep is None else np.swapaxes(keep, -1, -2)
    gv = np.empty((*batch, *v.shape[-2:]), q.dtype) if need[2] else None
    gq = np.empty(q.shape, q.dtype) if need[0] else None
    gk = np.empty((*batch, *k.shape[-2:]), q.dtype) if need[1] else None
    scores = need[0] or need[1] or need[3]
    gs = np.empty(pt.shape, q.dtype) if need[3] or (scores and not small) else None  # transposed
    if not small:  # the products whole, on OpenBLAS's threads; the softmax backward in parts
        if gv is not None:
            np.matmul(pt if keep_t is None else pt * keep_t, g, out=gv)
            if keep_t is not None:
                gv *= c
        if gs is not None:
            np.matmul(v, np.swapaxes(g, -1, -2), out=gs)

    def part(lo: int, hi: int) -> None:
        pr, gr = pt[lo:hi], g[lo:hi]
        kp = None if keep_t is None else keep_t[lo:hi]
        qr, kr, vr = (_part_of(a, nd, lo, hi) for a in (q, k, v))
        if small and gv is not None:
            np.matmul(pr if kp is None else pr * kp, gr, out=gv[lo:hi])
            if kp is not None:
                gv[lo:hi] *= c
        if not scores:
            return
        if small:
            ds = np.matmul(vr, np.swapaxes(gr, -1, -2), out=None if gs is None else gs[lo:hi])
        else:
            ds = gs[lo:hi]  # type: ignore[index]
        if kp is not None:
            ds *= kp
            ds *= c
        ds -= np.einsum("...ji,...ji->...i", ds, pr)[..., None, :]  # softmax backward: p (dp - sum(dp p))
        ds *= pr
        if small and gq is not None:
            np.matmul(np.swapaxes(ds, -1, -2), kr, out=gq[lo:hi])
            gq[lo:hi] *= scale
        if small and gk is not None:
            np.matmul(ds, qr, out=gk[lo:hi])
            gk[lo:hi] *= scale

    if scores or small:
        parallel_rows(b, pt.size, part)
    if not small:
        dsa: Any = gs
        if gq is not None:
            np.matmul(np.swapaxes(dsa, -1, -2), k, out=gq)
            gq *= scale
        if gk is not None:
            np.matmul(dsa, q, out=gk)
            gk *= scale
    return gq, gk, gv, (None if gs is None or not need[3] else np.swapaxes(gs, -1, -2))
