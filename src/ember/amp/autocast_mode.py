"""``ember.autocast``: mixed precision as ``torch.autocast`` (the op lists are in ``autograd/_autocast.py``).

Inside ``with ember.autocast("cuda"):`` (float16 by default) or ``ember.autocast("cpu")`` (bfloat16 by
default), matrix products and convolutions run in the lower type, reductions, softmax, norms and losses in
float32 (per PyTorch's list for that device type), and the parameters stay in their own dtype: the casts are
recorded, so gradients come back in each parameter's dtype. Blocks nest; ``enabled=False`` turns autocast
off inside one. The state is per thread.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .._dtype import DType, as_dtype, bfloat16, float16, float64
from .._errors import DeviceError, DTypeError
from .._tensor import Tensor
from ..autograd._autocast import ACTIVE, Region
from ..autograd._grad_mode import STATE

__all__ = [
    "autocast",
    "autocast_state",
    "custom_bwd",
    "custom_fwd",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_enabled",
]

F = TypeVar("F", bound=Callable[..., Any])
_DEFAULT_DTYPE = {"cuda": float16, "cpu": bfloat16}


class _ThreadDefaults(threading.local):
    """This thread's autocast dtype per device type outside a block (``set_autocast_dtype``), whether casts are
    cached (``set_autocast_cache_enabled``) and PyTorch's nesting counter."""

    def __init__(self) -> None:
        self.dtype, self.cache_enabled, self.nesting = dict(_DEFAULT_DTYPE), True, 0


THREAD = _ThreadDefaults()


def _device_type(device_type: Any) -> str:
    kind = str(getattr(device_type, "type", device_type)).partition(":")[0]
    if kind not in _DEFAULT_DTYPE:
        raise DeviceError(f"autocast: device_type must be 'cuda' or 'cpu', got {device_type!r}")
    return kind


def is_autocast_available(device_type: str) -> bool:
    """True for the device types autocast supports (``cuda`` and ``cpu``)."""
    return str(device_type) in _DEFAULT_DTYPE


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on in this thread for ``device_type`` (None: ``cuda``, as PyTorch's no-argument form)."""
    region = STATE.autocast
    return region is not None and region.lower(_device_type(device_type or "cuda")) is not None


def get_autocast_dtype(device_type: str) -> DType:
    """The lower dtype autocast uses on ``device_type`` in this thread (its default outside a block)."""
    kind = _device_type(device_type)
    region = STATE.autocast
    lower = region.lower(kind) if region is not None else None
    return lower if lower is not None else THREAD.dtype[kind]


def autocast_state() -> tuple[Any, ...]:
    """This thread's autocast state as a hashable tuple (cpu dtype, cuda dtype, cache on): a cheap guard key
    for code that specialises on it (``ember.compile``); ``(None, None, False)`` when autocast is off."""
    region = STATE.autocast
    if region is None:
        return (None, None, False)
    return (region.cpu, region.cuda, region.cache_enabled)


def install_region(cpu: DType | None, cuda: DType | None, cache_enabled: bool) -> Any:
    """Make this thread's autocast state the lower dtypes ``cpu``/``cuda`` (both None: off), keeping the cast cache
    of the region it replaces; return that region (None: autocast was off)."""
    prev = STATE.autocast
    cache = prev.cache if prev is not None else {}
    region = Region(cpu, cuda, cache_enabled, cache) if (cpu or cuda) else None
    STATE.autocast = region
    ACTIVE[0] += (region is not None) - (prev is not None)
    return prev


class autocast:  # noqa: N801 - PyTorch's name
    """A block (or a decorator) in which operators on ``device_type`` tensors run in mixed precision.

    ``dtype``: the lower type (default float16 on ``cuda``, bfloat16 on ``cpu``; only these two);
    ``enabled=False`` turns autocast off for the block; ``cache_enabled`` reuses one cast of each float32
    parameter per outermost block.
    """

    def __init__(
        self, device_type: str, dtype: Any = None, enabled: bool = True, cache_enabled: bool | None = None
    ) -> None:
        self.device_type = _device_type(device_type)
        self.fast_dtype = as_dtype(dtype) if dtype is not None else THREAD.dtype[self.device_type]
        self._enabled = bool(enabled)
        self._cache_enabled = THREAD.cache_enabled if cache_enabled is None else bool(cache_enabled)
        if self._enabled and self.fast_dtype not in (float16, bfloat16):
            raise DTypeError(
                f"autocast('{self.device_type}'): dtype must be ember.float16 or ember.bfloat16, got "
                f"{self.fast_dtype}; for full precision use enabled=False or leave autocast out"
            )
        self._prev: list[Any] = []

    def _check_here(self) -> None:
        """A clear error when this machine cannot run the block's device type in its dtype."""
        from .. import backends, cuda

        if self.device_type == "cuda" and not cuda.is_available():
            raise DeviceError("autocast('cuda'): no CUDA device is available here; use autocast('cpu') (bfloat16 "
                              "needs the torch backend, float16 runs anywhere) or enabled=False")  # fmt: skip
        if self.fast_dtype is bfloat16:
            from .._device import get_default_device

            here = get_default_device().type == self.device_type  # the default device's backend, if it is one
            be = backends.get_backend(None if here else self.device_type)
            if not be.supports_bfloat16:
                raise DTypeError(
                    f"autocast('{self.device_type}', dtype=ember.bfloat16): the {be.name} backend has no bfloat16; "
                    "use the torch backend (ember.backends.use('torch') or EMBER_BACKEND=torch), or "
                    "dtype=ember.float16 (correct, but slow on NumPy)"
                )

    def __enter__(self) -> autocast:
        prev = STATE.autocast
        if self._enabled:
            self._check_here()
        cpu = prev.cpu if prev is not None else None
        cuda_ = prev.cuda if prev is not None else None
        lower = self.fast_dtype if self._enabled else None
        if self.device_type == "cpu":
            cpu = lower
        else:
            cuda_ = lower
        self._prev.append(install_region(cpu, cuda_, self._cache_enabled))
        return self

    def __exit__(self, *exc: Any) -> None:
        prev = self._prev.pop()
        now = STATE.autocast
        STATE.autocast = prev
        if now is not None and prev is None:
            ACTIVE[0] -= 1
            now.cache.clear()  # the outermost block ends: its cached casts go
        elif now is None and prev is not None:
            ACTIVE[0] += 1

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device_type, self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*args, **kwargs)

        return run  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"ember.autocast({self.device_type!r}, dtype={self.fast_dtype}, enabled={self._enabled})"


def _cast(value: Any, device_type: str, dtype: Any) -> Any:
    """``value`` with its floating tensors on ``device_type`` (not float64) cast to ``dtype``, through lists,
    tuples and dicts (PyTorch's ``custom_fwd`` rule)."""
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd: Any = None, *, device_type: str, cast_inputs: Any = None) -> Any:
    """Decorator for a custom ``Function``'s ``forward`` under autocast.

    ``cast_inputs=None``: forward runs in the caller's autocast state, and ``custom_bwd`` runs backward in the
    same state. ``cast_inputs=dtype``: inside an autocast block on ``device_type``, floating tensors (not
    float64) are cast to ``dtype`` and forward runs with autocast off; outside one it runs as is.
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd: Any = None, *, device_type: str) -> Any:
    """Decorator for a custom ``Function``'s ``backward``: it runs in the autocast state its ``forward``
    (decorated with ``custom_fwd``) ran in."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        used = getattr(ctx, "_fwd_used_autocast", None)
        if used is None:
            raise RuntimeError("custom_bwd: the Function's forward is not decorated with custom_fwd")
        with autocast(device_type, enabled=used, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
