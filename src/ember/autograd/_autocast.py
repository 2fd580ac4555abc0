"""Autocast's dispatch: which operators run in lower precision, in float32, or in the widest input type.

PyTorch's op lists (``aten/src/ATen/autocast_mode.{h,cpp}``), per device type, for the operators Ember
has. Primitive operators are found by their ``Op`` class in ``Function.apply`` (``OP_NAMES`` maps the class
to PyTorch's op name); composite public functions that PyTorch runs as one op (``addmm``, the losses,
``layer_norm``...) carry ``@autocast_op(name)``, which casts their inputs and runs their body with autocast
off, as PyTorch's autocast kernel does. The state is per thread (``STATE.autocast``: None, or the
``Region`` of the innermost ``ember.autocast`` block); ``ACTIVE[0]`` counts the regions open in all
threads, so when nobody uses autocast an operator pays one list read.

Casting follows PyTorch: only floating tensors on the region's device type are cast, never float64 ones;
``promote`` picks float32 if any such input is float32, else the lower type; a float32 leaf that requires
grad (a parameter) is cast to the lower type once per region when ``cache_enabled``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from .._dtype import DType, float32, float64
from .._tensor import Tensor
from ._grad_mode import STATE

__all__ = ["ACTIVE", "OP_NAMES", "POLICIES", "Region", "autocast_inputs", "autocast_op", "cast_args"]

F = TypeVar("F", bound=Callable[..., Any])
ACTIVE = [0]  # open autocast regions in all threads (0: Function.apply skips the lookup)

LOWER, FP32, PROMOTE, NATIVE, BANNED = "lower", "fp32", "promote", "native", "banned"

_LOWER_CUDA = {
    "conv", "conv_transpose", "prelu", "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv", "linear",
    "addbmm", "baddbmm", "bmm", "chain_matmul", "multi_dot", "scaled_dot_product_attention",
}  # fmt: skip
_FP32_CUDA = {
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
    "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm", "norm", "cosine_similarity", "poisson_nll_loss",
    "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss",
    "huber_loss", "mse_loss", "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss",
    "binary_cross_entropy_with_logits", "dist", "cdist", "renorm", "logsumexp", "interpolate",
    # fp32_set_opt_dtype: computed and returned in float32
    "prod", "softmax", "log_softmax", "cumprod", "cumsum", "sum", "vector_norm",
}  # fmt: skip
_PROMOTE_CUDA = {"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "index_put", "tensordot",
                 "scatter_add", "cat", "stack"}  # fmt: skip
_LOWER_CPU = {
    "conv", "conv_transpose", "bmm", "mm", "baddbmm", "addmm", "addbmm", "linear", "matmul", "prelu",
    "scaled_dot_product_attention",
}  # fmt: skip
_FP32_CPU = {
    "avg_pool3d", "binary_cross_entropy", "prod", "quantile", "nanquantile", "cdist", "trace", "cholesky",
    "inverse", "pinverse", "max_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d", "mse_loss",
    "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "poisson_nll_loss", "smooth_l1_loss",
    "cross_entropy", "l1_loss", "huber_loss", "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss",
    "kl_div", "binary_cross_entropy_with_logits", "solve", "solve_triangular",
}  # fmt: skip
_PROMOTE_CPU = {"stack", "cat", "index_copy"}
# Ember composites that PyTorch runs as one kernel outside the lists: autocast does not reach inside them
_NATIVE = {"dot", "vdot", "mv", "addmv", "addr"}

#: device type -> PyTorch op name -> policy
POLICIES: dict[str, dict[str, str]] = {
    "cuda": {**dict.fromkeys(_NATIVE, NATIVE), **dict.fromkeys(_LOWER_CUDA, LOWER), **dict.fromkeys(_FP32_CUDA, FP32),
             **dict.fromkeys(_PROMOTE_CUDA, PROMOTE), "binary_cross_entropy": BANNED},
    "cpu": {**dict.fromkeys(_NATIVE, NATIVE), **dict.fromkeys(_LOWER_CPU, LOWER), **dict.fromkeys(_FP32_CPU, FP32),
            **dict.fromkeys(_PROMOTE_CPU, PROMOTE)},
}  # fmt: skip

#: Ember's primitive Op class -> PyTorch's op name (the composites name themselves in ``autocast_op``)
OP_NAMES = {
    "MatMul": "matmul", "_Linear": "linear", "Conv": "conv", "ConvT": "conv_transpose",
    "Softmax": "softmax", "LogSoftmax": "log_softmax", "Sum": "sum", "CumSum": "cumsum", "CumProd": "cumprod",
    "Exp": "exp", "Log": "log", "Pow": "pow", "Expm1": "expm1", "Log2": "log2", "Log10": "log10",
    "Log1p": "log1p", "Reciprocal": "reciprocal", "Rsqrt": "rsqrt", "Tan": "tan", "Asin": "asin", "Acos": "acos",
    "Sinh": "sinh", "Cosh": "cosh", "Erfinv": "erfinv", "Atan2": "atan2",
}  # fmt: skip


class Region:
    """One thread's autocast state: the lower dtype per device type (None: off there) and the cast cache."""

    __slots__ = ("cache", "cache_enabled", "cpu", "cuda")

    def __init__(self, cpu: DType | None, cuda: DType | None, cache_enabled: bool, cache: dict[int, Any]) -> None:
        self.cpu, self.cuda, self.cache_enabled, self.cache = cpu, cuda, cache_enabled, cache

    def lower(self, device_type: str) -> DType | None:
        return self.cuda if device_type == "cuda" else self.cpu if device_type == "cpu" else None


def _tensors(args: Any) -> Any:
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (t for t in a if isinstance(t, Tensor))


def _eligible(t: Tensor, device_type: str) -> bool:
    d = t.dtype
    return d.is_floating_point and d is not float64 and t._backend.device.type == device_type


def _policy(region: Region, name: str, args: Any) -> tuple[str | None, str]:
    """(op ``name``'s policy on the device type of its first tensor, or None; that device type)."""
    first = next(_tensors(args), None)
    if first is None:
        return None, ""
    device_type = first._backend.device.type
    if region.lower(device_type) is None:
        return None, device_type
    return POLICIES[device_type].get(name), device_type


def _target(region: Region, policy: str, device_type: str, args: Any) -> tuple[DType, str, bool]:
    """(the dtype to cast to, the device type, lower?) for ``policy`` (not NATIVE) on ``args``."""
    lower = region.lower(device_type)
    assert lower is not None
    if policy == LOWER:
        return lower, device_type, True
    if policy == FP32:
        return float32, device_type, False
    wide = any(t.dtype is float32 for t in _tensors(args) if _eligible(t, device_type))
    return (float32 if wide else lower), device_type, not wide


def _cast(region: Region, a: Any, to: DType, device_type: str, lower: bool) -> Any:
    if isinstance(a, (list, tuple)):
        return type(a)(_cast(region, x, to, device_type, lower) for x in a)
    if not isinstance(a, Tensor) or not _eligible(a, device_type) or a.dtype is to:
        return a
    if lower and region.cache_enabled and a.requires_grad and a._creator is None and a._view is None:
        hit = region.cache.get(id(a))
        if hit is not None and hit[0] is a:
            return hit[1]
        out = a.to(to)
        region.cache[id(a)] = (a, out)  # keeps ``a`` alive for the region, so its id cannot be reused
        return out
    return a.to(to)


def cast_args(cls: type, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` cast as autocast wants for the primitive operator ``cls`` (called by ``Function.apply``)."""
    region = STATE.autocast
    if region is None:
        return args
    name = OP_NAMES.get(cls.__name__)
    if name is None:
        return args
    policy, device_type = _policy(region, name, args)
    if policy is None or policy == NATIVE:
        return args
    target = _target(region, policy, device_type, args)
    STATE.autocast = None  # the casts themselves are not autocast
    try:
        return tuple(_cast(region, a, *target) for a in args)
    finally:
        STATE.autocast = region


def autocast_inputs(name: str, *args: Any) -> tuple[Any, ...]:
    """``args`` cast by op ``name``'s policy (for hot public functions, which check ``ACTIVE[0]`` inline
    rather than pay for the ``autocast_op`` wrapper; their primitives find the inputs already cast)."""
    region = STATE.autocast
    if region is None:
        return args
    policy, device_type = _policy(region, name, args)
    if policy is None or policy == NATIVE:
        return args
    target = _target(region, policy, device_type, args)
    STATE.autocast = None
    try:
        return tuple(_cast(region, a, *target) for a in args)
    finally:
        STATE.autocast = region


def autocast_op(name: str) -> Callable[[F], F]:
    """Mark a composite public function as PyTorch's op ``name``. Under autocast, where ``name`` has a policy
    its inputs are cast by it and its body runs with autocast off (PyTorch's autocast kernel); where it has
    none the body runs as is, its primitives cast by their own policies (PyTorch's fall-through)."""

    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            if not ACTIVE[0]:
                return fn(*args, **kwargs)
            region = STATE.autocast
            if region is None:
                return fn(*args, **kwargs)
            policy, device_type = _policy(region, name, (*args, *kwargs.values()))
            if policy is None:
                return fn(*args, **kwargs)
            if policy == BANNED:
                raise RuntimeError(
                    f"{name} is unsafe to autocast on CUDA (a float16 probability rounds to 0 or 1); use "
                    "binary_cross_entropy_with_logits (nn.BCEWithLogitsLoss) on the logits instead, as PyTorch says"
                )
            STATE.autocast = None
            try:
                if policy != NATIVE:
                    target = _target(region, policy, device_type, (*args, *kwargs.values()))
                    args = tuple(_cast(region, a, *target) for a in args)
                    kwargs = {k: _cast(region, v, *target) for k, v in kwargs.items()}
                return fn(*args, **kwargs)
            finally:
                STATE.autocast = region

        run.__wrapped_autocast__ = name  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return deco
