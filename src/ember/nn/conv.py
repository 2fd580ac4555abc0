"""Convolution layers: Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d."""

from __future__ import annotations

from typing import Any

from .._creation import empty
from .._tensor import Tensor
from . import functional as F
from . import init
from .config import config_for
from .module import Module
from .parameter import Param

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


def _ntuple(v: Any, n: int) -> tuple[int, ...]:
    return (int(v),) * n if isinstance(v, int) else tuple(int(x) for x in v)


class _ConvNd(Module):
    _sp = 2
    _transposed = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        output_padding: Any = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        for key, v in (("in_channels", in_channels), ("out_channels", out_channels), ("groups", groups)):
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: {key} must be a positive integer, got {v!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: groups={groups} must divide in_channels {in_channels} and out {out_channels}")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"{name}: unknown padding_mode {padding_mode!r}")
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"{name}: padding must be 'same', 'valid' or int(s), got {padding!r}")
        sp = self._sp
        k = _ntuple(kernel_size, sp)
        if len(k) != sp or min(k) <= 0:
            raise ValueError(f"{name}: kernel_size must be {sp} positive ints, got {kernel_size!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size: tuple[int, ...] = k
        self.stride, self.dilation = _ntuple(stride, sp), _ntuple(dilation, sp)
        self.padding: Any = padding if isinstance(padding, str) else _ntuple(padding, sp)
        if padding == "same" and any(s != 1 for s in self.stride):  # (PyTorch's check, at construction)
            raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
        self.output_padding = _ntuple(output_padding, sp)
        self.groups, self.padding_mode = groups, padding_mode
        shape = (in_channels, out_channels // groups) if self._transposed else (out_channels, in_channels // groups)
        self.weight = Param(empty(*shape, *k, device=device, dtype=dtype))
        if bias:
            self.bias = Param(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.reset_like_torch_(self.weight, self.bias)

    def _padded(self, input: Tensor) -> tuple[Tensor, Any]:
        if self.padding_mode == "zeros" or isinstance(self.padding, str):
            return input, self.padding
        pads = [v for p in reversed(self.padding) for v in (p, p)]
        return F.pad(input, pads, mode=self.padding_mode), 0

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._sp:
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) else f", padding={self.padding}"
        if self.dilation != (1,) * self._sp:
            s += f", dilation={self.dilation}"
        if self._transposed and self.output_padding != (0,) * self._sp:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    """PyTorch's ``Conv{1,2,3}d`` constructor (no ``output_padding``)."""

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
        dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device: Any = None,
        dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                         0, device, dtype)  # fmt: skip


class _ConvTranspose(_ConvNd):
    """PyTorch's ``ConvTranspose{1,2,3}d`` constructor: ``output_padding`` after ``padding``, ``dilation``
    after ``bias``."""

    _transposed = True

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
        output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1, padding_mode: str = "zeros",
        device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        if padding_mode != "zeros":
            raise ValueError(f'{type(self).__name__}: only padding_mode="zeros" is supported (as in PyTorch)')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                         output_padding, device, dtype)  # fmt: skip

    def _output_padding(self, input: Tensor, output_size: Any) -> Any:
        """``output_padding``, or the one that makes the output ``output_size`` (spatial sizes, or with the batch
        and channel dims in front) as PyTorch's ``forward(input, output_size)`` does."""
        if output_size is None:
            return self.output_padding
        sp = self._sp
        lead = 2 if input.ndim == sp + 2 else 1
        size = [int(v) for v in output_size]
        if len(size) == lead + sp:
            size = size[lead:]
        if len(size) != sp:
            raise ValueError(f"ConvTranspose{sp}D: for {input.ndim}D input, output_size must have {sp} or {lead + sp} "
                             f"elements (got {len(size)})")  # fmt: skip
        low = [(input.shape[lead + d] - 1) * self.stride[d] - 2 * self.padding[d]  # type: ignore[operator]
               + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(sp)]  # fmt: skip
        high = [lo + self.stride[d] - 1 for d, lo in enumerate(low)]  # type: ignore[operator]
        if any(not lo <= v <= hi for v, lo, hi in zip(size, low, high)):
            raise ValueError(f"requested an output size of {size}, but valid sizes range from {low} to {high} "
                             f"(for an input of {tuple(input.shape[lead:])})")  # fmt: skip
        return tuple(v - lo for v, lo in zip(size, low))


class Conv1d(_Conv):
    """1-d convolution over (N, C, L)."""

    _sp = 1

    def forward(self, input: Tensor) -> Tensor:
        x, p = self._padded(input)
        return F.conv1d(x, self.weight, self.bias, self.stride, p, self.dilation, self.groups)


class Conv2d(_Conv):
    """2-d convolution over (N, C, H, W); ``padding`` may be an int, a pair, ``'same'`` or ``'valid'``."""

    def forward(self, input: Tensor) -> Tensor:
        x, p = self._padded(input)
        return F.conv2d(x, self.weight, self.bias, self.stride, p, self.dilation, self.groups)


class Conv3d(_Conv):
    _sp = 3

    def forward(self, input: Tensor) -> Tensor:
        x, p = self._padded(input)
        return F.conv3d(x, self.weight, self.bias, self.stride, p, self.dilation, self.groups)


class ConvTranspose1d(_ConvTranspose):
    _sp = 1

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)  # fmt: skip


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-d convolution; ``weight`` (in_channels, out_channels / groups, kH, kW)."""

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)  # fmt: skip


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-d convolution; ``weight`` (in_channels, out_channels / groups, kD, kH, kW)."""

    _sp = 3

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)  # fmt: skip


Conv1dConfig = config_for(Conv1d)
Conv2dConfig = config_for(Conv2d)
Conv3dConfig = config_for(Conv3d)
ConvTranspose1dConfig = config_for(ConvTranspose1d)
ConvTranspose2dConfig = config_for(ConvTranspose2d)
ConvTranspose3dConfig = config_for(ConvTranspose3d)
__all__ += ["Conv1dConfig", "Conv2dConfig", "Conv3dConfig", "ConvTranspose1dConfig", "ConvTranspose2dConfig"]
__all__ += ["ConvTranspose3dConfig"]
