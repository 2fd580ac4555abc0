"""PyTorch's own operator database (``op_db``) sample inputs, with PyTorch's outputs and gradients, for Ember's tests.

Importing ``op_db`` takes 15-50 s, so the cases of each family are built once per torch version and kept in the
temp folder (a pickle this test suite wrote itself). ``cases(prefixes)`` returns, per OpInfo name, a list of
``Case``: the sample's input and args (arrays), kwargs, PyTorch's float64 outputs, and the gradients of the sum of
its floating outputs with respect to every floating input (None where PyTorch gives none or fails). A complex
output counts as the sum of its real and imaginary parts (``view_as_real``), so complex inputs and outputs get
gradients too (PyTorch's conjugate convention). ``dtypes`` picks the samples' dtypes (complex ones only for OpInfos
that list them); each case records its dtype.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import warnings
from typing import Any, NamedTuple

import numpy as np

MAX_SAMPLES = 10  # per OpInfo: the first ones (op_db orders them from small to edge cases)


class Arr(NamedTuple):
    """A tensor argument: its values and whether PyTorch's sample asked for its gradient."""

    value: np.ndarray
    grad: bool


class Case(NamedTuple):
    name: str
    index: int
    inputs: list[Any]  # the sample's input then args (Arr, numbers, tuples ...)
    kwargs: dict[str, Any]
    outputs: list[Any] | None  # numpy arrays (or numbers) of PyTorch's result; None when PyTorch raised
    grads: list[np.ndarray | None] | None  # per Arr input, d(sum of float outputs)/d input
    error: str | None
    dtype: str = "float64"  # the dtype op_db made the sample in


class UnconvertibleError(Exception):
    """A sample holding a tensor NumPy cannot take (sparse layouts, bfloat16): the sample is left out."""


def _array(torch: Any, x: Any) -> np.ndarray:
    """``x``'s values as a NumPy array (conj/neg bits resolved), or ``UnconvertibleError``."""
    if x.layout != torch.strided or x.dtype == torch.bfloat16:
        raise UnconvertibleError(f"{x.layout} {x.dtype}")
    try:
        return x.detach().resolve_conj().resolve_neg().cpu().numpy().copy()
    except (TypeError, RuntimeError, ValueError) as e:
        raise UnconvertibleError(str(e)) from None


def _to_plain(torch: Any, x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return Arr(_array(torch, x), bool(x.requires_grad))
    if isinstance(x, (list, tuple)):
        return type(x)(_to_plain(torch, v) for v in x)
    if isinstance(x, dict):  # keyword arguments may hold tensors (istft's window)
        return {k: _to_plain(torch, v) for k, v in x.items()}
    if isinstance(x, torch.dtype):
        return str(x).replace("torch.", "").replace("ember.", "")
    return x


def _flat_outputs(torch: Any, out: Any) -> list[Any]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        res = []
        for o in out:
            res.extend(_flat_outputs(torch, o))
        return res
    return [out]


def _build(
    torch: Any,
    prefixes: tuple[str, ...],
    dtypes: tuple[str, ...] = ("float64",),
    exclude: tuple[str, ...] = (),
    max_samples: int = MAX_SAMPLES,
    variants: bool = False,
) -> dict[str, list[Case]]:
    from torch.testing._internal.common_methods_invocations import op_db

    out: dict[str, list[Case]] = {}
    for info in op_db:
        if not info.name.startswith(prefixes) or info.name.startswith(exclude):
            continue
        if info.variant_test_name and not variants:
            continue
        key = f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name
        cases: list[Case] = []
        for dtype_name in dtypes:
            dtype = getattr(torch, dtype_name)
            if dtype.is_complex and dtype not in info.supported_dtypes("cpu"):
                continue
            cases.extend(_build_info(torch, info, dtype, len(cases), max_samples))
        if cases:
            out[key] = cases
    return out


def _build_info(torch: Any, info: Any, dtype: Any, first: int, max_samples: int = MAX_SAMPLES) -> list[Case]:
    """The cases of one OpInfo's samples in ``dtype`` (indices from ``first``; samples NumPy cannot hold left
    out, their indices kept so that a case's index stays its sample's)."""
    try:
        samples = iter(info.sample_inputs("cpu", dtype, requires_grad=info.supports_autograd))
        taken = [s for _, s in zip(range(max_samples), samples, strict=False)]
    except Exception:  # an OpInfo whose samples need a feature this build lacks
        return []
    dname = str(dtype).replace("torch.", "").replace("ember.", "")
    cases = []
    for i, s in enumerate(taken, start=first):
        inputs = [s.input, *s.args]
        try:
            plain_in, plain_kw = [_to_plain(torch, v) for v in inputs], _to_plain(torch, s.kwargs)
        except UnconvertibleError:
            continue
        try:
            res = _flat_outputs(torch, info.op(s.input, *s.args, **s.kwargs))
        except Exception as e:
            cases.append(Case(info.name, i, plain_in, plain_kw, None, None, str(e)[:200], dname))
            continue
        try:
            outputs = [_array(torch, r) if isinstance(r, torch.Tensor) else r for r in res]
        except UnconvertibleError:
            continue
        leaves = [v for v in inputs if isinstance(v, torch.Tensor) and v.requires_grad]
        grads: list[Any] | None = None
        floats = [r for r in res if isinstance(r, torch.Tensor) and r.requires_grad]
        if leaves and floats:
            try:
                total = sum((torch.view_as_real(r) if r.is_complex() else r).sum() for r in floats)
                gs = torch.autograd.grad(total, leaves, allow_unused=True)
                it = iter(gs)
                grads = [
                    (None if (g := next(it)) is None else _array(torch, g))
                    if isinstance(v, torch.Tensor) and v.requires_grad
                    else None
                    for v in inputs
                ]
            except Exception:
                grads = None
        cases.append(Case(info.name, i, plain_in, plain_kw, outputs, grads, None, dname))
    return cases


class ErrorCase(NamedTuple):
    """One of an OpInfo's ``error_inputs``: the sample, and the exception type PyTorch raises (its name)."""

    name: str
    index: int
    inputs: list[Any]
    kwargs: dict[str, Any]
    error_type: str
    error_regex: str = ""


class Meta(NamedTuple):
    """What an OpInfo declares beyond its samples: its variants and whether it supports autograd."""

    name: str
    method: bool
    inplace: bool
    autograd: bool


def _build_errors(torch: Any, max_errors: int) -> tuple[dict[str, list[ErrorCase]], dict[str, Meta]]:
    from torch.testing._internal.common_methods_invocations import op_db

    errors: dict[str, list[ErrorCase]] = {}
    meta: dict[str, Meta] = {}
    for info in op_db:
        key = f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name
        meta[key] = Meta(
            info.name, info.method_variant is not None, info.inplace_variant is not None, info.supports_autograd
        )
        try:
            taken = [e for _, e in zip(range(max_errors), info.error_inputs("cpu"), strict=False)]
        except Exception:  # an OpInfo whose error inputs need a feature this build lacks
            continue
        found = []
        for i, e in enumerate(taken):
            s = e.sample_input
            try:
                plain_in, plain_kw = [_to_plain(torch, v) for v in [s.input, *s.args]], _to_plain(torch, s.kwargs)
            except UnconvertibleError:
                continue
            found.append(ErrorCase(info.name, i, plain_in, plain_kw, e.error_type.__name__, str(e.error_regex)))
        if found:
            errors[key] = found
    return errors, meta


def error_cases(max_errors: int = 20) -> tuple[dict[str, list[ErrorCase]], dict[str, Meta]]:
    """Every OpInfo's first ``max_errors`` error inputs, and every OpInfo's ``Meta`` (cached like ``cases``)."""
    import torch

    path = os.path.join(tempfile.gettempdir(), f"ember-opdb-errors-v2-{torch.__version__}-{max_errors}.pkl")
    try:
        with open(path, "rb") as f:
            raw_err, raw_meta = pickle.load(f)  # a cache this test suite wrote (plain tuples, dicts, arrays)
        errs = {
            k: [ErrorCase(c[0], c[1], _unplain(c[2]), _unplain(c[3]), *c[4:]) for c in v] for k, v in raw_err.items()
        }
        return errs, {k: Meta(*m) for k, m in raw_meta.items()}
    except (OSError, EOFError, pickle.UnpicklingError, TypeError, ValueError):
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        errs, meta = _build_errors(torch, max_errors)
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "wb") as f:
        plain_err = {
            k: [(c.name, c.index, _plain(c.inputs), _plain(c.kwargs), c.error_type, c.error_regex) for c in v]
            for k, v in errs.items()
        }
        pickle.dump((plain_err, {k: tuple(m) for k, m in meta.items()}), f)
    os.replace(tmp, path)
    return errs, meta


def _plain(x: Any) -> Any:
    if isinstance(x, Arr):
        return ("__arr__", x.value, x.grad)
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x) if not hasattr(x, "_fields") else tuple(_plain(v) for v in x)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return x


def _unplain(x: Any) -> Any:
    if isinstance(x, tuple) and len(x) == 3 and x[0] == "__arr__":
        return Arr(x[1], x[2])
    if isinstance(x, (list, tuple)):
        return type(x)(_unplain(v) for v in x)
    if isinstance(x, dict):
        return {k: _unplain(v) for k, v in x.items()}
    return x


def _plain_case(c: Case) -> tuple[Any, ...]:
    return (c.name, c.index, _plain(c.inputs), _plain(c.kwargs), c.outputs, c.grads, c.error, c.dtype)


def cases(
    prefixes: tuple[str, ...],
    tag: str,
    dtypes: tuple[str, ...] = ("float64",),
    exclude: tuple[str, ...] = (),
    max_samples: int = MAX_SAMPLES,
    variants: bool = False,
) -> dict[str, list[Case]]:
    """The cached cases of the OpInfos whose names start with ``prefixes`` and not with ``exclude``, in ``dtypes``
    (complex ones only for OpInfos that list them), the first ``max_samples`` per dtype (built on first use).
    With ``variants`` an OpInfo's variants come too, keyed ``name.variant`` (each case's ``name`` is the op's)."""
    import torch

    path = os.path.join(tempfile.gettempdir(), f"ember-opdb-{tag}-{torch.__version__}-{max_samples}.pkl")
    try:
        with open(path, "rb") as f:
            raw = pickle.load(f)  # a cache this test suite wrote (plain tuples, dicts, arrays)
        return {k: [Case(c[0], c[1], _unplain(c[2]), _unplain(c[3]), *c[4:]) for c in v] for k, v in raw.items()}
    except (OSError, EOFError, pickle.UnpicklingError, TypeError, ValueError):
        pass
    with warnings.catch_warnings():  # PyTorch's deprecation warnings are not its errors (pytest makes them so)
        warnings.simplefilter("ignore")
        built = _build(torch, prefixes, dtypes, exclude, max_samples, variants)
    result = built
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "wb") as f:  # plain tuples: no class of this module is pickled
        pickle.dump({k: [_plain_case(c) for c in v] for k, v in built.items()}, f)
    os.replace(tmp, path)
    return result


DTYPE_NAMES = ("float32", "float64", "complex64", "complex128", "int64", "int32", "bool")


def to_ember(x: Any) -> Any:
    """A case's plain inputs/kwargs as Ember values: arrays to tensors (leaves where PyTorch's required grad),
    containers element by element, dtype names to Ember dtypes."""
    import ember

    if isinstance(x, Arr):
        t = ember.tensor(x.value)
        return t.requires_grad_(True) if x.grad and (t.dtype.is_floating_point or t.dtype.is_complex) else t
    if isinstance(x, list):
        return [to_ember(v) for v in x]
    if isinstance(x, tuple):
        return tuple(to_ember(v) for v in x)
    if isinstance(x, dict):
        return {k: to_ember(v) for k, v in x.items()}
    if isinstance(x, str) and x in DTYPE_NAMES:
        return getattr(ember, x)
    return x


#: OpInfos whose op is a Tensor method (op_db calls ``x.name(*args)``); all others are ``ember.name``
METHODS = {
    "__radd__", "__rmul__", "__rmatmul__", "__rpow__", "__rsub__", "__rdiv__", "__rmod__", "__rand__", "__ror__",
    "__rxor__", "__getitem__", "__setitem__", "cdouble", "cfloat", "contiguous",
    "sum_to_size", "expand", "expand_as", "to", "reshape_as", "view", "view_as", "bool", "byte", "char", "double",
    "float", "half", "int", "long", "short", "new_zeros", "new_ones", "new_empty", "new_empty_strided", "new_full",
    "unfold", "repeat", "item", "type_as", "chalf", "bfloat16",
}  # fmt: skip


def _resolve(root: Any, name: str) -> Any:
    for part in name.split("."):
        root = getattr(root, part, None)
        if root is None:
            return None
    return root


def _special() -> dict[str, Any]:
    import ember

    return {
        "einsum": lambda tensors, equation: ember.einsum(equation, tensors),
        "where": lambda self, condition, other, **kw: ember.where(condition, self, other, **kw),
        "resize_": lambda x, shape: x.clone().resize_(shape),
        "resize_as_": lambda x, other: x.clone().resize_as_(other),
        "zero_": lambda x: x.clone().zero_(),
        "T": lambda x: x.T,
        "H": lambda x: x.H,
        "mT": lambda x: x.mT,
        "mH": lambda x: x.mH,
        "svd_lowrank": lambda a, b, **kw: ember.svd_lowrank(a @ b.mT, **kw),
        "pca_lowrank": lambda a, b, **kw: ember.pca_lowrank(a @ b.mT, **kw),
    }


def ember_fn(name: str) -> Any:
    """Ember's operator for the OpInfo ``name`` (called like op_db's ``op``), or None where Ember has none."""
    import ember

    special = _special()
    if name in special:
        return special[name]
    if name not in METHODS:
        fn = _resolve(ember, name)
        if fn is not None and callable(fn):
            return fn
    return getattr(ember.Tensor, name, None)


def ember_value(x: Any) -> Any:
    """A case's input/kwarg for Ember: ``to_ember``, and a torch.nn module (a distance function) as Ember's."""
    import ember

    if type(x).__module__.startswith("torch.nn"):  # built with its default arguments in op_db's samples
        return getattr(ember.nn, type(x).__name__)()
    if type(x).__module__ == "torch" and type(x).__name__ == "layout":  # torch.strided: Ember's of that name
        return getattr(ember, str(x).replace("torch.", ""))
    if isinstance(x, dict):
        return {k: ember_value(v) for k, v in x.items()}
    return to_ember(x)
