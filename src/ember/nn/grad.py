"""``ember.nn.grad`` (PyTorch's ``torch.nn.grad``): a convolution's gradient with respect to its input or weight.

``conv2d_input(input_size, weight, grad_output, ...)`` is what ``conv2d``'s backward gives its input for
``grad_output``; ``conv2d_weight(input, weight_size, grad_output, ...)`` what it gives its weight. Both run the
convolution's own backward, so they equal ``autograd.grad`` of ``conv2d`` exactly, and are differentiable when
their tensor arguments require gradients.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import autograd
from .._creation import zeros
from .._tensor import Tensor
from ..autograd._grad_mode import is_grad_enabled
from .functional import conv1d, conv2d, conv3d

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _backward(
    conv: Callable[..., Tensor], name: str, x: Tensor, w: Tensor, wrt: Tensor, grad_output: Tensor, conv_args: Any
) -> Tensor:
    with autograd.enable_grad():
        y = conv(x, w, None, *conv_args)
    if tuple(y.shape) != tuple(grad_output.shape):
        raise RuntimeError(
            f"{name}: grad_output has shape {tuple(grad_output.shape)}, but the convolution of an input of shape "
            f"{tuple(x.shape)} with a weight of shape {tuple(w.shape)} gives {tuple(y.shape)}"
        )
    create = is_grad_enabled() and any(t.requires_grad for t in (x, w, grad_output) if t is not wrt)
    (g,) = autograd.grad(y, wrt, grad_output, create_graph=create)
    return g


def _input_fn(conv: Callable[..., Tensor], name: str) -> Callable[..., Tensor]:
    def fn(
        input_size: Sequence[int],
        weight: Tensor,
        grad_output: Tensor,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
    ) -> Tensor:
        x = zeros(tuple(input_size), dtype=weight.dtype, device=weight.device, requires_grad=True)
        return _backward(conv, name, x, weight, x, grad_output, (stride, padding, dilation, groups))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The gradient of ``{conv.__name__}`` with respect to an input of shape ``input_size``."
    return fn


def _weight_fn(conv: Callable[..., Tensor], name: str) -> Callable[..., Tensor]:
    def fn(
        input: Tensor,
        weight_size: Sequence[int],
        grad_output: Tensor,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
    ) -> Tensor:
        w = zeros(tuple(weight_size), dtype=input.dtype, device=input.device, requires_grad=True)
        return _backward(conv, name, input, w, w, grad_output, (stride, padding, dilation, groups))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The gradient of ``{conv.__name__}`` with respect to a weight of shape ``weight_size``."
    return fn


conv1d_input = _input_fn(conv1d, "conv1d_input")
conv2d_input = _input_fn(conv2d, "conv2d_input")
conv3d_input = _input_fn(conv3d, "conv3d_input")
conv1d_weight = _weight_fn(conv1d, "conv1d_weight")
conv2d_weight = _weight_fn(conv2d, "conv2d_weight")
conv3d_weight = _weight_fn(conv3d, "conv3d_weight")
