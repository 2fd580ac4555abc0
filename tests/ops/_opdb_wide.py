"""op_db samples beyond ``_opdb_cases``' first five float ones: every sample, integer/bool/half dtypes, and the
second-order gradients PyTorch computes, for ``tools/opdb_sweep_wide.py`` and ``tests/ops/test_opdb_wide.py``.

Cases are ``_opdb_cases.Case`` (so the sweep's checks take them) plus ``WideCase.out_dtypes`` (the result dtypes by
name: a bfloat16 output is kept as float32 values) and ``WideCase.gradgrads``: for float64 samples of OpInfos with
``supports_gradgrad``, the gradient with respect to each input of ``sum_i <w_i, g_i>``, ``g_i`` the (create_graph)
gradient of the sum of the floating outputs and ``w_i`` fixed weights (``weights``); None where PyTorch gives
none. A bfloat16 tensor argument is stored as ``Half`` (float32 values, made bfloat16 by ``to_ember``). The cache
is pickled in the temp folder per torch version like ``_opdb_cases``' (building it takes minutes).
"""

from __future__ import annotations

import os
import pickle
import tempfile
import time
import warnings
from typing import Any, NamedTuple

import _opdb_cases as oc
import numpy as np


class Half(NamedTuple):
    """A bfloat16 tensor argument: its values as float32 (NumPy has no bfloat16)."""

    value: np.ndarray
    grad: bool


class WideCase(NamedTuple):
    name: str
    index: int
    inputs: list[Any]
    kwargs: dict[str, Any]
    outputs: list[Any] | None
    grads: list[np.ndarray | None] | None
    error: str | None
    dtype: str
    out_dtypes: list[str] | None = None
    gradgrads: list[np.ndarray | None] | None = None

    def case(self) -> oc.Case:
        return oc.Case(*self[:8])


def weights(shape: tuple[int, ...]) -> np.ndarray:
    """The fixed weights of a first-order gradient in the second-order check (float64, no zeros)."""
    n = int(np.prod(shape, dtype=np.int64))
    return (np.cos(np.arange(n, dtype=np.float64)) + 1.5).reshape(shape)


def _plain(torch: Any, x: Any) -> Any:
    if isinstance(x, torch.memory_format):  # (pickled by a name only the building module resolves): Ember's
        import ember

        return getattr(ember, str(x).replace("torch.", ""))
    if isinstance(x, torch.Tensor) and x.layout == torch.strided and x.dtype == torch.bfloat16:
        return Half(x.detach().float().numpy().copy(), bool(x.requires_grad))
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(torch, v) for v in x)
    if isinstance(x, dict):
        return {k: _plain(torch, v) for k, v in x.items()}
    return oc._to_plain(torch, x)


def _out_array(torch: Any, r: Any) -> Any:
    if isinstance(r, torch.Tensor) and r.dtype == torch.bfloat16:
        return r.detach().float().numpy().copy()
    return oc._array(torch, r) if isinstance(r, torch.Tensor) else r


def _dtype_name(torch: Any, r: Any) -> str:
    return str(r.dtype).replace("torch.", "") if isinstance(r, torch.Tensor) else type(r).__name__


def _grad_array(torch: Any, g: Any) -> np.ndarray:
    if g._is_zerotensor():  # PyTorch's symbolic zeros
        return np.zeros(tuple(g.shape), str(g.dtype).replace("torch.", ""))
    return oc._array(torch, g)


def _gradients(torch: Any, inputs: list[Any], res: list[Any], second: bool) -> tuple[Any, Any]:
    leaves = [v for v in inputs if isinstance(v, torch.Tensor) and v.requires_grad]
    floats = [r for r in res if isinstance(r, torch.Tensor) and r.requires_grad]
    if not leaves or not floats:
        return None, None

    def per_input(gs: Any) -> list[Any]:
        it = iter(gs)
        return [
            (None if (g := next(it)) is None else _grad_array(torch, g))
            if isinstance(v, torch.Tensor) and v.requires_grad
            else None
            for v in inputs
        ]

    try:
        total = sum((torch.view_as_real(r) if r.is_complex() else r).sum() for r in floats)
        gs = torch.autograd.grad(total, leaves, allow_unused=True, create_graph=second)
    except Exception:
        return None, None
    grads = per_input(gs)
    if not second:
        return grads, None
    terms = [(g * torch.from_numpy(weights(tuple(g.shape)))).sum() for g in gs if g is not None and g.requires_grad]
    if not terms:  # a linear operator: every second derivative is zero
        return grads, per_input([torch.zeros_like(v) for v in leaves])
    try:
        gg = torch.autograd.grad(sum(terms), leaves, allow_unused=True)
    except Exception:
        return grads, None
    return grads, per_input(gg)


def _build_info(torch: Any, info: Any, dtype: Any, first: int, max_samples: int, budget: float) -> list[WideCase]:
    floating = dtype.is_floating_point or dtype.is_complex
    grad = info.supports_autograd and dtype in (torch.float64, torch.float32)
    second = dtype == torch.float64 and grad and bool(getattr(info, "supports_gradgrad", False))
    try:
        samples = iter(info.sample_inputs("cpu", dtype, requires_grad=grad and floating))
        taken = [s for _, s in zip(range(max_samples), samples, strict=False)]
    except Exception:
        return []
    dname = str(dtype).replace("torch.", "")
    out: list[WideCase] = []
    t0 = time.time()
    for i, s in enumerate(taken, start=first):
        if time.time() - t0 > budget:
            break
        inputs = [s.input, *s.args]
        try:
            plain_in, plain_kw = [_plain(torch, v) for v in inputs], _plain(torch, s.kwargs)
        except oc.UnconvertibleError:
            continue
        try:
            res = oc._flat_outputs(torch, info.op(s.input, *s.args, **s.kwargs))
        except Exception as e:
            out.append(WideCase(info.name, i, plain_in, plain_kw, None, None, str(e)[:200], dname))
            continue
        try:
            outputs = [_out_array(torch, r) for r in res]
        except oc.UnconvertibleError:
            continue
        grads, gg = _gradients(torch, inputs, res, second) if grad else (None, None)
        dts = [_dtype_name(torch, r) for r in res]
        out.append(WideCase(info.name, i, plain_in, plain_kw, outputs, grads, None, dname, dts, gg))
    return out


def _build(
    dtypes: tuple[str, ...], exclude: tuple[str, ...], max_samples: int, budget: float
) -> dict[str, list[WideCase]]:
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    torch.set_num_threads(1)
    built: dict[str, list[WideCase]] = {}
    for info in op_db:
        if info.name.startswith(exclude) and not info.name.startswith(("__r", "__getitem__")):
            continue
        key = f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name
        cases: list[WideCase] = []
        for dname in dtypes:
            dtype = getattr(torch, dname)
            if dtype not in info.supported_dtypes("cpu"):
                continue
            torch.manual_seed(0)
            cases.extend(_build_info(torch, info, dtype, len(cases), max_samples, budget))
        if cases:
            built[key] = cases
    return built


def _half_plain(x: Any) -> Any:
    if isinstance(x, Half):
        return ("__bf16__", x.value, x.grad)
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_half_plain(v) for v in x)
    if isinstance(x, dict):
        return {k: _half_plain(v) for k, v in x.items()}
    return x


def _unplain(x: Any) -> Any:
    if isinstance(x, tuple) and len(x) == 3 and x[0] in ("__arr__", "__bf16__"):
        return (oc.Arr if x[0] == "__arr__" else Half)(x[1], x[2])
    if isinstance(x, (list, tuple)):
        return type(x)(_unplain(v) for v in x)
    if isinstance(x, dict):
        return {k: _unplain(v) for k, v in x.items()}
    return x


def cases(
    dtypes: tuple[str, ...], tag: str, exclude: tuple[str, ...] = (), max_samples: int = 10_000, budget: float = 30.0
) -> dict[str, list[WideCase]]:
    """Every OpInfo's samples (up to ``max_samples`` per dtype, ``budget`` seconds per OpInfo and dtype) in
    ``dtypes``, cached in the temp folder under ``tag``."""
    import torch

    path = os.path.join(tempfile.gettempdir(), f"ember-opdb-wide2-{tag}-{torch.__version__}-{max_samples}.pkl")
    try:
        with open(path, "rb") as f:
            raw = pickle.load(f)  # a cache this test suite wrote (plain tuples, dicts, arrays)
        return {k: [WideCase(c[0], c[1], _unplain(c[2]), _unplain(c[3]), *c[4:]) for c in v] for k, v in raw.items()}
    except (OSError, EOFError, pickle.UnpicklingError, TypeError, ValueError, ImportError, AttributeError):
        pass  # (none yet, or written by another version of this module: rebuilt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = _build(dtypes, exclude, max_samples, budget)
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "wb") as f:
        raw = {
            k: [
                (c.name, c.index, oc._plain(_half_plain(c.inputs)), oc._plain(_half_plain(c.kwargs)), *c[4:]) for c in v
            ]
            for k, v in built.items()
        }
        pickle.dump(raw, f)
    os.replace(tmp, path)
    return cases(dtypes, tag, exclude, max_samples, budget)


#: dtype names beyond ``_opdb_cases.DTYPE_NAMES`` that a sample's kwargs may hold
MORE_DTYPES = ("float16", "bfloat16", "uint8", "int8", "int16")


def to_ember(x: Any) -> Any:
    """``_opdb_cases.to_ember`` that also makes ``Half`` arguments bfloat16 tensors."""
    import ember

    if type(x).__module__.startswith("torch.nn") or (type(x).__module__ == "torch" and type(x).__name__ == "layout"):
        return oc.ember_value(x)
    if isinstance(x, Half):
        t = ember.tensor(x.value, dtype=ember.bfloat16)
        return t.requires_grad_(True) if x.grad else t
    if isinstance(x, list):
        return [to_ember(v) for v in x]
    if isinstance(x, tuple) and not isinstance(x, oc.Arr):
        return tuple(to_ember(v) for v in x)
    if isinstance(x, dict):
        return {k: to_ember(v) for k, v in x.items()}
    if isinstance(x, str) and x in MORE_DTYPES:
        return getattr(ember, x)
    return oc.to_ember(x)
