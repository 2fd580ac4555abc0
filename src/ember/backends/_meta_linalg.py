"""``numpy.linalg``'s names for the meta device: the shapes and dtypes of their results."""

from __future__ import annotations

import builtins
import types
from typing import Any

import numpy as np

from ._meta_array import MetaArray
from ._meta_rules import as_meta as _meta
from ._meta_rules import reduced


def _same(m: MetaArray) -> MetaArray:
    return MetaArray(m.shape, m.dtype)


def _square(a: Any) -> MetaArray:
    m = _meta(a)
    if m.ndim < 2 or m.shape[-1] != m.shape[-2]:
        raise ValueError(f"expected a batch of square matrices, got shape {m.shape}")
    return m


def _float_dt(m: MetaArray) -> Any:
    return m.dtype if m.dtype.kind in "fc" else np.dtype(np.float64)


def _linalg_norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> MetaArray:
    m = _meta(x)
    return reduced(m, axis, keepdims, np.empty(0, _float_dt(m)).real.dtype)


def _svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, **_: Any) -> Any:
    m = _meta(a)
    *b, r, c = m.shape
    k = builtins.min(r, c)
    s = MetaArray((*b, k), np.empty(0, _float_dt(m)).real.dtype)
    if not compute_uv:
        return s
    u = MetaArray((*b, r, r if full_matrices else k), _float_dt(m))
    vh = MetaArray((*b, c if full_matrices else k, c), _float_dt(m))
    return u, s, vh


def _qr(a: Any, mode: str = "reduced") -> Any:
    m = _meta(a)
    *b, r, c = m.shape
    k = builtins.min(r, c) if mode != "complete" else r
    return MetaArray((*b, r, k), _float_dt(m)), MetaArray((*b, k, c), _float_dt(m))


def _eigh(a: Any, UPLO: str = "L") -> Any:  # noqa: N803 - NumPy's name
    m = _square(a)
    return MetaArray(m.shape[:-1], np.empty(0, _float_dt(m)).real.dtype), MetaArray(m.shape, _float_dt(m))


def _slogdet(a: Any) -> Any:
    m = _square(a)
    return MetaArray(m.shape[:-2], _float_dt(m)), MetaArray(m.shape[:-2], np.empty(0, _float_dt(m)).real.dtype)


def _solve(a: Any, b: Any) -> MetaArray:
    ma, mb = _square(a), _meta(b)
    if mb.ndim == 1:
        return MetaArray(ma.shape[:-1], np.result_type(ma.dtype, mb.dtype))
    return MetaArray((*np.broadcast_shapes(ma.shape[:-2], mb.shape[:-2]), *mb.shape[-2:]),
                     np.result_type(ma.dtype, mb.dtype))  # fmt: skip


linalg = types.SimpleNamespace(
    cholesky=lambda a, **_: _same(_square(a)),
    det=lambda a: MetaArray(_square(a).shape[:-2], _float_dt(_meta(a))),
    eigh=_eigh,
    inv=lambda a: _same(_square(a)),
    norm=_linalg_norm,
    qr=_qr,
    slogdet=_slogdet,
    solve=_solve,
    svd=_svd,
    pinv=lambda a, **_: MetaArray((*_meta(a).shape[:-2], _meta(a).shape[-1], _meta(a).shape[-2]), _meta(a).dtype),
    LinAlgError=np.linalg.LinAlgError,
)
