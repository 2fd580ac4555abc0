"""Folding an eval-mode BatchNorm into the convolution or linear layer before it (PyTorch's
``torch.nn.utils.fusion``): one layer computing ``bn(layer(x))`` with the running statistics."""

from __future__ import annotations

import copy
from typing import TypeVar

from ..._tensor import Tensor
from ...autograd._grad_mode import no_grad
from ..module import Module
from ..parameter import Param

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]

M = TypeVar("M", bound=Module)


def _scale(bn_rv: Tensor, bn_eps: float, bn_w: Tensor | None) -> Tensor:
    s = (bn_rv + bn_eps).rsqrt()
    return s if bn_w is None else bn_w * s


def fuse_conv_bn_weights(
    conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float, bn_w: Tensor | None,
    bn_b: Tensor | None, transpose: bool = False,
) -> tuple[Param, Param]:  # fmt: skip
    """The weight and bias of one convolution equal to ``conv`` then eval-mode BatchNorm (``transpose``: a
    transposed convolution, whose output channels are its weight's dim 1)."""
    dtype = conv_w.dtype
    if conv_b is None:
        conv_b = bn_rm.new_zeros(bn_rm.shape)
    if bn_b is None:
        bn_b = bn_rm.new_zeros(bn_rm.shape)
    scale = _scale(bn_rv, bn_eps, bn_w)
    shape = [1, -1] + [1] * (conv_w.ndim - 2) if transpose else [-1] + [1] * (conv_w.ndim - 1)
    w = (conv_w * scale.reshape(shape)).to(dtype)
    b = ((conv_b - bn_rm) * scale + bn_b).to(dtype)
    return Param(w, requires_grad=conv_w.requires_grad), Param(b, requires_grad=conv_b.requires_grad)


def fuse_conv_bn_eval(conv: M, bn: Module, transpose: bool = False) -> M:
    """A copy of ``conv`` (eval mode) with ``bn`` (eval mode) folded into its weight and bias."""
    if conv.training or bn.training:
        raise RuntimeError("fuse_conv_bn_eval: only works in eval mode (call .eval() on both modules)")
    fused = copy.deepcopy(conv)
    with no_grad():
        w, b = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight,
                                    bn.bias, transpose)  # fmt: skip
    fused.weight, fused.bias = w, b
    return fused


def fuse_linear_bn_weights(
    linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float, bn_w: Tensor,
    bn_b: Tensor,
) -> tuple[Param, Param]:  # fmt: skip
    """The weight and bias of one linear layer equal to ``linear`` then eval-mode BatchNorm1d."""
    if linear_b is None:
        linear_b = bn_rm.new_zeros(bn_rm.shape)
    scale = _scale(bn_rv, bn_eps, bn_w)
    w = linear_w * scale.unsqueeze(-1)
    b = (linear_b - bn_rm) * scale + bn_b
    return Param(w, requires_grad=linear_w.requires_grad), Param(b, requires_grad=linear_b.requires_grad)


def fuse_linear_bn_eval(linear: M, bn: Module) -> M:
    """A copy of ``linear`` (eval mode) with ``bn`` (eval mode) folded into its weight and bias."""
    if linear.training or bn.training:
        raise RuntimeError("fuse_linear_bn_eval: only works in eval mode (call .eval() on both modules)")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise ValueError(
            f"fuse_linear_bn_eval: the linear layer's {linear.out_features} outputs and BatchNorm's "
            f"{bn.num_features} features must match (or BatchNorm has 1)"
        )
    fused = copy.deepcopy(linear)
    with no_grad():
        w, b = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight,
                                      bn.bias)  # fmt: skip
    fused.weight, fused.bias = w, b
    return fused
