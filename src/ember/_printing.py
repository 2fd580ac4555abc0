"""Tensor printing in the spec's format (OriginDL §2.7).

0-d: ``(1.0)``; 1-d: ``[1.0, 2.0, 3.0]``; 2-d: rows aligned under ``[[``; 3-d and up: 2-d slices in
memory order under 0-based headers ``(0,0,.,.) = ``, each value right-aligned, and a footer naming the
shape, dtype and device. Large tensors show their first and last ``EDGE`` entries per dim around ``...``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._dtype import get_default_dtype

#: ``set_printoptions``'s state: significant digits, the element count above which a tensor is summarized, the
#: entries kept at each end of a summarized dim, and scientific notation (None: chosen per value)
OPTIONS: dict[str, Any] = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}
_PROFILES = {"default": (4, 1000, 3), "short": (2, 1000, 2), "full": (4, math.inf, 3)}


def set_printoptions(
    precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
    linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None,
) -> None:  # fmt: skip
    """How tensors print: ``precision`` significant digits (PyTorch: digits after the point), ``threshold``
    elements before summarizing with ``...``, ``edgeitems`` kept at each end, ``sci_mode`` True/False to force or
    forbid scientific notation, ``profile`` "default", "short" or "full" (no summarizing). ``linewidth`` is taken
    for PyTorch's signature (kept, see ``get_printoptions``): Ember's format never wraps a row."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be 'default', 'short' or 'full', got {profile!r}")
        OPTIONS["precision"], OPTIONS["threshold"], OPTIONS["edgeitems"] = _PROFILES[profile]
        OPTIONS["linewidth"] = 80
    for key, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                       ("linewidth", linewidth)):  # fmt: skip
        if value is not None:
            OPTIONS[key] = value
    OPTIONS["sci_mode"] = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current print options (``set_printoptions``'s keywords), as PyTorch's ``_tensor_str.get_printoptions``."""
    return dict(OPTIONS)


def _number(f: float, short: str) -> str:
    """``f`` with ``precision`` digits: in ``short`` form ("g"), or as ``sci_mode`` forces it."""
    p, sci = OPTIONS["precision"], OPTIONS["sci_mode"]
    if sci is None:
        return format(f, f".{p}{short}")
    return format(f, f".{p}e" if sci else f".{p}f")


def _complex(v: Any, fmt: Any) -> str:
    """``re+imj`` with each part in the float format (PyTorch prints complex numbers this way)."""
    re, im = float(v.real), float(v.imag)
    sign = "-" if im < 0 or (im == 0 and np.signbit(im)) else "+"
    return f"{fmt(re, 'f')}{sign}{fmt(abs(im), 'f')}j"


def _fmt(v: Any, kind: str) -> str:
    if kind == "c":
        return _complex(v, _fmt)
    if kind == "b":
        return "true" if v else "false"
    if kind == "f":
        f = float(v)
        if np.isnan(f) or np.isinf(f):
            return str(f)
        return f"{f:.1f}" if f.is_integer() and abs(f) < 1e16 and OPTIONS["sci_mode"] is None else _number(f, "g")
    return str(int(v))


def _fmt_block(v: Any, kind: str) -> str:
    if kind == "c":
        return _complex(v, _fmt_block)
    if kind == "f":
        f = float(v)
        if not np.isfinite(f) or (f.is_integer() and OPTIONS["sci_mode"] is None):
            return f"{f:g}"
        return _number(f, "g")
    return _fmt(v, kind)


def _edges(n: int, summarize: bool) -> list[int | None]:
    edge = OPTIONS["edgeitems"]
    if summarize and n > 2 * edge:
        return [*range(edge), None, *range(n - edge, n)]
    return list(range(n))


def _row(arr: np.ndarray, kind: str, summarize: bool) -> str:
    return "[" + ", ".join("..." if i is None else _fmt(arr[i], kind) for i in _edges(arr.shape[0], summarize)) + "]"


def _suffix(t: Any) -> str:
    parts = []
    if t._creator is not None:
        parts.append(f"grad_fn=<{t._creator.name}>")
    elif t.requires_grad:
        parts.append("requires_grad=True")
    return "".join(", " + p for p in parts)


def format_meta(t: Any) -> str:
    """A meta tensor as PyTorch prints one: no values, its device and size (and dtype when not the default)."""
    head = "tensor(..."
    parts = ["device='meta'", f"size={tuple(t.shape)}"]
    if t.dtype is not get_default_dtype():
        parts.append(f"dtype={t.dtype!r}")
    parts += [p for p in _suffix(t).split(", ") if p]
    out, width = head, len(head)
    for p in parts:  # a part that would pass 80 columns starts a new line under the first value (PyTorch's wrap)
        if width + len(p) + 2 > 80:
            out += ",\n" + " " * 7 + p
            width = 7 + len(p)
        else:
            out += ", " + p
            width += len(p) + 2
    return out + ")"


def format_tensor(t: Any) -> str:
    if t._backend.device.type == "meta":
        return format_meta(t)
    arr = np.asarray(t._backend.to_numpy(t._data))
    kind = arr.dtype.kind
    summarize = arr.size > OPTIONS["threshold"]
    if arr.ndim == 0:
        return f"({_fmt(arr.item(), kind)})" + _suffix(t)
    if arr.ndim == 1:
        return _row(arr, kind, summarize) + _suffix(t)
    if arr.ndim == 2:
        rows = []
        for i in _edges(arr.shape[0], summarize):
            rows.append(" ..." if i is None else _row(arr[i], kind, summarize))
        body = "[" + ",\n ".join(rows).replace(",\n  ...,", ",\n ...,") + "]"
        return body + _suffix(t)
    lines: list[str] = []
    width = 6
    blocks: list[tuple[int, ...] | None] = []
    for idx in np.ndindex(*arr.shape[:-2]):
        edge = OPTIONS["edgeitems"]
        if summarize and any(edge <= k < n - edge for k, n in zip(idx, arr.shape[:-2], strict=True) if n > 2 * edge):
            if not blocks or blocks[-1] is not None:
                blocks.append(None)
            continue
        blocks.append(idx)
    cells = [_fmt_block(v, kind) for v in arr.reshape(-1)[: min(arr.size, 100000)]]
    width = max([width] + [len(c) for c in cells])
    for blk in blocks:
        if blk is None:
            lines.append("...")
            continue
        lines.append("(" + ",".join(str(k) for k in blk) + ",.,.) = ")
        block = arr[blk]
        for r in _edges(block.shape[0], summarize):
            if r is None:
                lines.append(" " * (width - 3) + "...")
                continue
            vals = ["..." if c is None else _fmt_block(block[r, c], kind) for c in _edges(block.shape[1], summarize)]
            lines.append("  ".join(v.rjust(width) for v in vals))
    shape = ", ".join(str(s) for s in arr.shape)
    extra = _suffix(t)
    lines.append("")
    lines.append(f" Tensor(shape=[{shape}], dtype={t.dtype.name}, device={t.device}{extra})")
    return "\n".join(lines)
