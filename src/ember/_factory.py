"""PyTorch's factory keywords on Ember's public creation functions: ``layout``, ``pin_memory``, ``memory_format`` and
``out``.

``ember.zeros(2, layout=ember.strided, pin_memory=False)`` and ``ember.zeros_like(p,
memory_format=ember.preserve_format)`` are what PyTorch code writes. Ember's tensors are dense and row-major, so:
``layout`` may be ``strided`` (a sparse layout is refused, naming ``sparse_coo_tensor``); ``memory_format`` is a tag
(``docs/architecture.md``), checked as PyTorch checks it (a memory format, ``channels_last`` for 4-d results only);
``pin_memory=True`` pins as ``Tensor.pin_memory`` does; ``out=`` takes the result, its dtype and device giving the
result's when ``dtype`` is not given (PyTorch's rule for factories). The wrappers sit on the public names only
(``ember.zeros``, ``Tensor.new_zeros``): Ember's own code calls the functions underneath.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ._dtype import as_dtype, channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format
from ._tensor import Tensor

__all__ = ["factory"]


def _check(name: str, layout: Any, fmt: Any, allow_preserve: bool) -> None:
    if layout is not None and getattr(layout, "name", None) != "strided":
        raise RuntimeError(
            f"{name}(): layout={layout} is not supported: Ember makes dense (strided) tensors here; "
            "build sparse tensors with sparse_coo_tensor or Tensor.to_sparse()"
        )
    if fmt is not None:
        if not isinstance(fmt, memory_format):
            raise TypeError(f"{name}(): argument 'memory_format' must be ember.memory_format, not {type(fmt).__name__}")
        if fmt is preserve_format and not allow_preserve:
            raise RuntimeError(f"{name}(): unsupported memory format Preserve")


def _rank_check(fmt: Any, result: Tensor) -> None:
    for tag, rank in ((channels_last, 4), (channels_last_3d, 5)):
        if fmt is tag and result.ndim != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {tag.name} format")


def _into(name: str, out: Any, result: Tensor) -> Tensor:
    from .ops._out import _write

    if tuple(out.shape) != tuple(result.shape):  # a factory resizes ``out`` without PyTorch's deprecation warning
        out.resize_(*result.shape)
    return _write(name, result, out, True)


def factory(
    fn: Callable[..., Tensor], *, out: bool = False, fmt: bool = False, like: bool = False
) -> Callable[..., Tensor]:
    """``fn`` taking ``layout=``/``pin_memory=`` (and ``out=`` when ``out``, ``memory_format=`` when ``fmt``)."""
    name = fn.__name__

    @functools.wraps(fn)
    def call(
        *args: Any, layout: Any = None, pin_memory: bool = False, memory_format: Any = None, **kwargs: Any
    ) -> Tensor:
        if memory_format is not None and not fmt:
            raise TypeError(f"{name}() got an unexpected keyword argument 'memory_format'")
        if layout is not None or memory_format is not None:
            _check(name, layout, memory_format, like)
        target = kwargs.pop("out", None) if out else None
        if target is not None:
            if not isinstance(target, Tensor):
                raise TypeError(f"{name}(): argument 'out' must be a Tensor, not {type(target).__name__}")
            dtype = kwargs.get("dtype")
            if dtype is not None and as_dtype(dtype) != target.dtype:
                raise RuntimeError(f"{name}(): dtype {as_dtype(dtype)} does not match dtype of out parameter "
                                   f"({target.dtype})")  # fmt: skip
            kwargs["dtype"] = target.dtype
            kwargs.setdefault("device", target.device)
        result = fn(*args, **kwargs)
        if memory_format is not None and memory_format is not contiguous_format:
            _rank_check(memory_format, result)
        if pin_memory:
            result = result.pin_memory()
        return result if target is None else _into(name, target, result)

    return call


#: the public creation functions by what they take: ``out=`` (and ``memory_format=`` for ``empty``)
_WITH_OUT = ("zeros", "ones", "full", "arange", "eye", "linspace", "logspace", "range", "randperm", "rand", "randn",
             "randint")  # fmt: skip
_LIKE = ("zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like")
_PLAIN = ("tensor", "tril_indices", "triu_indices", "scalar_tensor", "empty_strided", "empty_permuted", "normal",
          "bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window")  # fmt: skip
_METHODS = ("new_zeros", "new_ones", "new_full", "new_empty", "new_empty_strided", "new_tensor")


def install(namespace: dict[str, Any]) -> None:
    """Wrap the creation functions of ``namespace`` (``ember``'s globals) and Tensor's ``new_*`` methods."""
    for name in _WITH_OUT:
        namespace[name] = factory(namespace[name], out=True)
    namespace["empty"] = factory(namespace["empty"], out=True, fmt=True)
    for name in _LIKE:
        namespace[name] = factory(namespace[name], fmt=True, like=True)
    for name in _PLAIN:
        namespace[name] = factory(namespace[name])
    for name in _METHODS:
        setattr(Tensor, name, factory(getattr(Tensor, name)))
