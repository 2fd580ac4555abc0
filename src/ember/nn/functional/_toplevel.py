"""PyTorch's top-level functional names (``torch.conv2d``, ``torch.batch_norm``, ``torch.kl_div``, ...), served by
``ember.nn.functional``. ``ember.<name>`` loads them on first use (``ember.__getattr__``), as ``ember.nn`` itself.

Most are the functional with the same arguments. The rest follow ATen's argument order where it differs from the
functional's: ``embedding(weight, indices)``, ``batch_norm(input, weight, bias, running_mean, ...)``, losses
taking ``reduction`` as ATen's integer (0 none, 1 mean, 2 sum; omitted, PyTorch's top-level losses reduce
nothing: ``torch.kl_div(a, b)`` has ``a``'s shape), and pools returning ``(values, indices)``.
"""

from __future__ import annotations

from typing import Any

from ... import _errors
from ..._tensor import Tensor
from ...func import vmap
from .. import functional as F
from ._toplevel_native import NAMES as NATIVE

# The functionals PyTorch also exposes at the top level, with the same arguments.
SAME = {
    name: getattr(F, name)
    for name in (
        "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "dropout",
        "alpha_dropout", "feature_alpha_dropout", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
        "cosine_similarity", "pairwise_distance", "pdist", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
        "adaptive_avg_pool1d", "bilinear", "prelu", "selu", "celu", "rrelu", "threshold", "hardshrink", "rms_norm",
    )
}  # fmt: skip

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(op: str, reduction: Any) -> str:
    if isinstance(reduction, str) and reduction in _REDUCTIONS:
        return reduction
    if isinstance(reduction, int) and not isinstance(reduction, bool) and 0 <= reduction < 3:
        return _REDUCTIONS[reduction]
    raise _errors.ValueRangeError(f"{op}: reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction!r}")


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    return F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    return F.log_softmax(input, dim, dtype=dtype)


def layer_norm(
    input: Tensor, normalized_shape: Any, weight: Tensor | None = None, bias: Tensor | None = None,
    eps: float = 1e-5, cudnn_enable: bool = True,
) -> Tensor:  # fmt: skip
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(
    input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5,
    cudnn_enabled: bool = True,
) -> Tensor:  # fmt: skip
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(
    input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
    running_var: Tensor | None, training: bool, momentum: float, eps: float, cudnn_enabled: bool = True,
) -> Tensor:  # fmt: skip
    """``torch.batch_norm``: the weight and bias come before the running statistics (the functional's order is
    ``running_mean, running_var, weight, bias``)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(
    input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
    running_var: Tensor | None, use_input_stats: bool, momentum: float, eps: float, cudnn_enabled: bool = True,
) -> Tensor:  # fmt: skip
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def embedding(
    weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False, sparse: bool = False
) -> Tensor:
    """``torch.embedding``: the weight first; a ``padding_idx`` of -1 means none (the functional's None)."""
    pad = None if padding_idx == -1 else padding_idx
    return F.embedding(indices, weight, pad, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def constant_pad_nd(input: Tensor, pad: Any, value: float = 0) -> Tensor:
    return F.pad(input, pad, "constant", value)


def adaptive_max_pool1d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)  # type: ignore[no-any-return]


def max_pool1d_with_indices(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False
) -> tuple[Tensor, Tensor]:
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode, return_indices=True)  # type: ignore[no-any-return]


def kl_div(input: Tensor, target: Tensor, reduction: Any = 0, *, log_target: bool = False) -> Tensor:
    return F.kl_div(input, target, reduction=_reduction("kl_div", reduction), log_target=log_target)


def binary_cross_entropy_with_logits(
    input: Tensor, target: Tensor, weight: Tensor | None = None, pos_weight: Tensor | None = None, reduction: Any = 0
) -> Tensor:
    red = _reduction("binary_cross_entropy_with_logits", reduction)
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=red, pos_weight=pos_weight)


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: Any = 0
) -> Tensor:
    red = _reduction("cosine_embedding_loss", reduction)
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=red)


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: Any = 0
) -> Tensor:
    red = _reduction("margin_ranking_loss", reduction)
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=red)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: Any = 0) -> Tensor:
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction("hinge_embedding_loss", reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float, reduction: Any) -> Tensor:
    red = _reduction("poisson_nll_loss", reduction)
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=red)


def triplet_margin_loss(
    anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
    swap: bool = False, reduction: Any = 0,
) -> Tensor:  # fmt: skip
    red = _reduction("triplet_margin_loss", reduction)
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=red)


def ctc_loss(
    log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0, reduction: Any = 0,
    zero_infinity: bool = False,
) -> Tensor:  # fmt: skip
    red = _reduction("ctc_loss", reduction)
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, red, zero_infinity)


NAMES = {
    **SAME,
    **{f.__name__: f for f in (softmax, log_softmax, layer_norm, group_norm, batch_norm, instance_norm, embedding,
                               constant_pad_nd, adaptive_max_pool1d, max_pool1d_with_indices, kl_div,
                               binary_cross_entropy_with_logits, cosine_embedding_loss, margin_ranking_loss,
                               hinge_embedding_loss, poisson_nll_loss, triplet_margin_loss, ctc_loss)},
}  # fmt: skip


# PyTorch's top-level in-place functions: ``torch.relu_(x)`` is ``x.relu_()`` (the functional's, where it has one)
INPLACE = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
    "asin_", "asinh_", "atan_", "atanh_", "ceil_", "celu_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_",
    "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "gcd_",
    "i0_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_",
    "rad2deg_", "reciprocal_", "relu_", "round_", "rrelu_", "rsqrt_", "selu_", "sigmoid_", "sin_", "sinc_", "sinh_",
    "sqrt_", "square_", "tan_", "tanh_", "threshold_", "trunc_", "xlogy_",
)  # fmt: skip


def _method(name: str) -> Any:
    def call(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        return getattr(input, name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``input.{name}(...)``."
    return call


NAMES.update({name: getattr(F, name, None) or _method(name) for name in INPLACE})
NAMES["vmap"] = vmap  # (torch.vmap is torch.func.vmap)
NAMES.update(NATIVE)  # (native_layer_norm ..., lstm_cell ...: ``_toplevel_native.py``)
