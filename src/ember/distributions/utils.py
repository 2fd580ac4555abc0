"""Helpers shared by the distributions: broadcasting parameters, probabilities and logits, lazy properties."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._creation import tensor as _tensor
from .._dtype import get_default_dtype
from .._tensor import Tensor

__all__ = ["broadcast_all", "broadcast_shapes", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits"]


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape all ``shapes`` broadcast to (NumPy's rule), or a ValueError naming them."""
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for i, d in enumerate((1,) * (n - len(s)) + tuple(s)):
            if d != 1:
                if out[i] not in (1, d):
                    raise ValueError(f"shapes {', '.join(str(tuple(x)) for x in shapes)} cannot broadcast")
                out[i] = d
    return tuple(out)


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Tensors and numbers as tensors of one broadcast shape (numbers take the tensors' dtype and device)."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    for v in values:
        if not isinstance(v, (Tensor, int, float)):
            raise ValueError(f"Input arguments must all be instances of numbers or Tensors, got {type(v).__name__}")
    like = tensors[0] if tensors else None
    dtype = like.dtype if like is not None and like.dtype.is_floating_point else get_default_dtype()
    device = like.device if like is not None else None
    ts = [v if isinstance(v, Tensor) else _tensor(float(v), dtype=dtype, device=device) for v in values]
    shape = broadcast_shapes(*(t.shape for t in ts))
    return tuple(t if t.shape == shape else t.expand(*shape) for t in ts)


def finfo(t: Tensor) -> Any:
    """NumPy-style finfo (eps, tiny, min, max) of a floating tensor's dtype."""
    return t._backend.finfo(t._data.dtype)


def clamp_probs(probs: Tensor) -> Tensor:
    eps = float(finfo(probs).eps)
    return probs.clamp(eps, 1 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: sigmoid for binary events, softmax over the last dim otherwise."""
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from probabilities (clamped away from 0 and 1 first)."""
    p = clamp_probs(probs)
    return (p.log() - (-p).log1p()) if is_binary else p.log()


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the ``dim`` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(*value.shape[: value.ndim - dim], -1).sum(-1)


_sum_rightmost = sum_rightmost  # PyTorch's private name, which libraries on torch.distributions import (Pyro)


class lazy_property:  # noqa: N801 - PyTorch's name
    """A property computed on first access and then cached on the instance."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class BinaryEvent:
    """Mixin of the distributions of a success probability given as ``probs`` or as ``logits`` (exactly one);
    the other is derived on first use."""

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    def _probs_or_logits(self, name: str, probs: Any, logits: Any, *others: Any) -> tuple[Tensor, ...]:
        """Broadcast ``others`` with the one given of ``probs``/``logits`` and keep that one; returns them all."""
        if (probs is None) == (logits is None):
            raise ValueError(f"{name}: either `probs` or `logits` must be specified, but not both.")
        ts = broadcast_all(*others, probs if probs is not None else logits)
        setattr(self, "probs" if probs is not None else "logits", ts[-1])
        return ts
