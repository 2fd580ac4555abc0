"""Lazy modules: the input size (``in_features``, ``in_channels``, ``num_features``) is read from the first input.

A lazy module holds its other constructor arguments and no parameters. Its first call (or a
``load_state_dict``, which reads the size from the saved weights) builds the real module in place: the
object becomes a ``Linear``/``Conv2d``/``BatchNorm1d``/... (PyTorch's ``cls_to_become``), initialised as
that class initialises. Create optimizers after the first call, as PyTorch recommends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._creation import tensor
from .._dtype import int64
from .._tensor import Tensor
from ._uninitialized import UninitializedBuffer, UninitializedParameter, _Uninitialized, is_lazy
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .module import Module
from .norm import BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = [
    "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
    "LazyInstanceNorm3d", "LazyLinear",
]  # fmt: skip


class _Lazy(Module):
    cls_to_become: type[Module]
    _sp = 0  # spatial dims of the input (an unbatched input has one dim fewer)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        self._lazy_kwargs = kwargs
        dd: dict[str, Any] = {"device": kwargs.get("device"), "dtype": kwargs.get("dtype")}
        affine = kwargs.get("affine", True)  # (norms have it; layers always have a weight)
        if affine:
            self.weight = UninitializedParameter(**dd)
            self.bias = UninitializedParameter(**dd) if kwargs.get("bias", True) else None
        if kwargs.get("track_running_stats"):
            self.register_buffer("running_mean", UninitializedBuffer(**dd))
            self.register_buffer("running_var", UninitializedBuffer(**dd))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64, device=dd["device"]))

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        if isinstance(tensor, UninitializedBuffer):  # (kept as it is: the placeholder object itself)
            self._check_name(name)
            self._params[name] = tensor
            return
        super().register_buffer(name, tensor, persistent)

    def __setattr__(self, name: str, value: Any) -> None:
        if value is None and name == "bias" and "bias" not in self._params:
            self._params["bias"] = None  # (a lazy layer without bias: PyTorch's registered None)
            return
        super().__setattr__(name, value)

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer is still a placeholder (True until the first call)."""
        return any(is_lazy(p) for p in self._params.values())

    def _in_size(self, input: Tensor) -> int:
        """The channel (or feature) count of ``input``."""
        return int(input.shape[1] if input.ndim == self._sp + 2 else input.shape[0])

    def _in_from_state(self, state: Mapping[str, Any]) -> int | None:
        return None

    def initialize_parameters(self, size: int) -> None:
        """Become ``cls_to_become`` with ``size`` input channels (or features)."""
        target = self.cls_to_become
        kwargs = self._lazy_kwargs
        training = self.training
        placeholders = {k: p for k, p in self._params.items() if isinstance(p, _Uninitialized)}
        object.__setattr__(self, "__class__", target)
        for k in list(self.__dict__):
            del self.__dict__[k]
        target.__init__(self, size, **kwargs)  # type: ignore[misc, call-arg]
        self.train(training)
        for k, old in placeholders.items():  # the placeholders become the parameters (PyTorch's materialize)
            new = self._params.get(k)
            if new is not None:
                old._become(new)
                self._params[k] = old

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], Tensor):
            self.initialize_parameters(self._in_size(args[0]))
        return self(*args, **kwargs)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        size = self._in_from_state({k: v for k, v in state_dict.items() if not is_lazy(v)})
        if size is None and any(is_lazy(v) for v in state_dict.values()):
            return super().load_state_dict(state_dict, strict, assign)  # a lazy module's state: it stays lazy
        if size is None:
            raise RuntimeError(f"{type(self).__name__}: cannot read the input size from a state_dict with keys "
                               f"{list(state_dict)}; call the module on an input first")  # fmt: skip
        self.initialize_parameters(size)
        return self.load_state_dict(state_dict, strict, assign)  # now the real module's method

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
        """As a child of the module being loaded: become the real module if the state holds its weights."""
        own = {k[len(prefix) :]: v for k, v in state_dict.items() if k.startswith(prefix) and not is_lazy(v)}
        size = self._in_from_state(own)
        if size is not None:
            self.initialize_parameters(size)
            return self._load_from_state_dict(state_dict, prefix, *args)  # now the real module's method
        super()._load_from_state_dict(state_dict, prefix, *args)


class LazyLinear(_Lazy):
    """``Linear`` whose ``in_features`` is the last dim of the first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(out_features=out_features, bias=bias, device=device, dtype=dtype)

    def _in_size(self, input: Tensor) -> int:
        return int(input.shape[-1])

    def _in_from_state(self, state: Mapping[str, Any]) -> int | None:
        w = state.get("weight")
        return int(w.shape[1]) if w is not None else None


class _LazyConv(_Lazy):
    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:  # fmt: skip
        super().__init__(out_channels=out_channels, kernel_size=kernel_size, stride=stride, padding=padding,
                         dilation=dilation, groups=groups, bias=bias, padding_mode=padding_mode, device=device,
                         dtype=dtype)  # fmt: skip

    def _in_from_state(self, state: Mapping[str, Any]) -> int | None:
        w = state.get("weight")
        return int(w.shape[1]) * int(self._lazy_kwargs["groups"]) if w is not None else None


class LazyConv1d(_LazyConv):
    cls_to_become, _sp = Conv1d, 1


class LazyConv2d(_LazyConv):
    cls_to_become, _sp = Conv2d, 2


class LazyConv3d(_LazyConv):
    cls_to_become, _sp = Conv3d, 3


class _LazyConvTranspose(_Lazy):
    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:  # fmt: skip
        super().__init__(out_channels=out_channels, kernel_size=kernel_size, stride=stride, padding=padding,
                         output_padding=output_padding, groups=groups, bias=bias, dilation=dilation,
                         padding_mode=padding_mode, device=device, dtype=dtype)  # fmt: skip

    def _in_from_state(self, state: Mapping[str, Any]) -> int | None:
        w = state.get("weight")
        return int(w.shape[0]) if w is not None else None


class LazyConvTranspose1d(_LazyConvTranspose):
    cls_to_become, _sp = ConvTranspose1d, 1


class LazyConvTranspose2d(_LazyConvTranspose):
    cls_to_become, _sp = ConvTranspose2d, 2


class LazyConvTranspose3d(_LazyConvTranspose):
    cls_to_become, _sp = ConvTranspose3d, 3


class _LazyNorm(_Lazy):
    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:  # fmt: skip
        super().__init__(eps=eps, momentum=momentum, affine=affine, track_running_stats=track_running_stats,
                         device=device, dtype=dtype, bias=bias)  # fmt: skip

    def _in_from_state(self, state: Mapping[str, Any]) -> int | None:
        for key in ("weight", "running_mean", "bias", "running_var"):
            if state.get(key) is not None:
                return int(state[key].shape[0])
        return None


class LazyBatchNorm1d(_LazyNorm):
    cls_to_become, _sp = BatchNorm1d, 1

    def _in_size(self, input: Tensor) -> int:
        return int(input.shape[1])


class LazyBatchNorm2d(_LazyNorm):
    cls_to_become, _sp = BatchNorm2d, 2


class LazyBatchNorm3d(_LazyNorm):
    cls_to_become, _sp = BatchNorm3d, 3


class LazyInstanceNorm1d(_LazyNorm):
    cls_to_become, _sp = InstanceNorm1d, 1


class LazyInstanceNorm2d(_LazyNorm):
    cls_to_become, _sp = InstanceNorm2d, 2


class LazyInstanceNorm3d(_LazyNorm):
    cls_to_become, _sp = InstanceNorm3d, 3
