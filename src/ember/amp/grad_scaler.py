"""``GradScaler``: dynamic loss scaling for float16 training, step for step as ``torch.amp.GradScaler``.

The scale and the growth tracker live on the host as float32/int values; ``scale`` multiplies by the scale as a 0-d
float32 tensor (as PyTorch's scale is), made once per value and device, so no transfer per step. Under
``ember.compile`` the tensor comes from a live call (``@opaque``), and ``unscale_``, ``step`` and ``update`` are
live calls too: a replayed step reads the current scale, checks for inf/NaN and updates as eager does. The inf/NaN
check runs on the gradients' device (``Backend.unscale_grads_``) and is read back once, in ``step`` (as PyTorch
reads ``found_inf`` there). The update rule is ``torch._amp_update_scale_``'s, in float32: on an inf/NaN step
``scale = float32(scale * backoff_factor)`` and the tracker restarts; after ``growth_interval`` clean steps in a row
``scale = float32(scale * growth_factor)`` when that is finite.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import Any

import numpy as np

from .._dtype import float32
from .._errors import DeviceError, DTypeError
from .._tensor import Tensor
from ..autograd._capture import opaque

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _f32(x: float) -> float:
    """``x`` rounded to float32, as the scale is stored."""
    return float(np.float32(x))


@opaque
def _scale_tensor(scaler: GradScaler, backend: Any) -> Tensor:
    """The scaler's scale as a 0-d float32 tensor on ``backend``, made once per value (an opaque call: a compiled
    step gets the current one at each replay)."""
    kept = scaler._scale_tensors.get(id(backend))
    if kept is None or kept[0] != scaler._scale:
        kept = scaler._scale_tensors[id(backend)] = (scaler._scale, Tensor._make(
            backend.asarray(np.float32(scaler._scale), float32), backend))  # fmt: skip
    return kept[1]


class GradScaler:
    """Scale the loss up so float16 gradients do not underflow; unscale them before the optimizer step.

    ``scaler.scale(loss).backward()``, then ``scaler.step(optimizer)`` (unscales, checks for inf/NaN and
    skips the step when it finds one), then ``scaler.update()``. Call ``scaler.unscale_(optimizer)`` before
    ``step`` to clip or inspect the true gradients. ``device`` is ``"cuda"`` or ``"cpu"``; ``enabled=False``
    makes every method a pass-through.
    """

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        kind = str(device).partition(":")[0]
        if kind not in ("cpu", "cuda"):
            raise DeviceError(f"GradScaler: device must be 'cuda' or 'cpu', got {device!r}")
        self._device = kind
        self._enabled = bool(enabled)
        if self._enabled and kind == "cuda":
            from .. import cuda

            if not cuda.is_available():
                raise DeviceError(
                    "GradScaler('cuda'): no CUDA device is available here; use GradScaler('cpu') for training on the "
                    "CPU, or enabled=False (ember.cuda.is_available() says when a GPU is usable)"
                )
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError(f"GradScaler: growth_factor must be > 1.0, got {growth_factor}")
            if backoff_factor >= 1.0:
                raise ValueError(f"GradScaler: backoff_factor must be < 1.0, got {backoff_factor}")
            if int(growth_interval) < 1:
                raise ValueError(f"GradScaler: growth_interval must be >= 1, got {growth_interval}")
        self._scale = _f32(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer: dict[int, dict[str, Any]] = {}
        self._scale_tensors: dict[int, tuple[float, Tensor]] = {}  # per backend: (scale, 0-d float32 tensor)

    # -- the three calls of a training step ------------------------------------------------------------
    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or nested lists/tuples of them) times the current scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if outputs.ndim == 0 and outputs.dtype.name in ("float16", "bfloat16"):
                outputs = outputs.float()  # PyTorch: a 0-d half times its 0-d float32 scale is float32
            return outputs * _scale_tensor(self, outputs._backend)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, Iterable):
            return map(self.scale, outputs)
        raise TypeError(f"GradScaler.scale: outputs must be a Tensor or an iterable of Tensors, got "
                        f"{type(outputs).__name__}")  # fmt: skip

    def _state(self, optimizer: Any) -> dict[str, Any]:
        st = self._per_optimizer.get(id(optimizer))
        if st is None:
            st = self._per_optimizer[id(optimizer)] = {"stage": OptState.READY, "found": [], "found_value": None}
        return st

    @opaque
    def unscale_(self, optimizer: Any) -> None:
        """Divide the optimizer's gradients by the scale in place and note whether any holds an inf or NaN.

        Call it at most once per optimizer between ``update`` calls, before ``step`` (e.g. to clip).
        """
        if not self._enabled:
            return
        st = self._state(optimizer)
        if st["stage"] is OptState.UNSCALED:
            raise RuntimeError("GradScaler.unscale_() has already been called on this optimizer since the last "
                               "update()")  # fmt: skip
        if st["stage"] is OptState.STEPPED:
            raise RuntimeError("GradScaler.unscale_() is being called after step(); call it before step()")
        inv_scale = _f32(1.0 / self._scale)  # the reciprocal in float64, then float32 (as PyTorch)
        by_backend: dict[int, tuple[Any, list[Any]]] = {}
        for group in optimizer.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if g.dtype.name == "float16":
                    raise DTypeError(
                        "GradScaler: attempting to unscale float16 gradients; keep the parameters in float32 "
                        "(autocast computes in float16 while the weights and their gradients stay float32)"
                    )
                by_backend.setdefault(id(g._backend), (g._backend, []))[1].append(g._data)
        st["found"] = [be.unscale_grads_(arrays, inv_scale) for be, arrays in by_backend.values()]
        st["found_value"] = None
        st["stage"] = OptState.UNSCALED

    def _found_inf(self, st: dict[str, Any]) -> float:
        """The number of devices whose gradients held an inf/NaN (reads the flags back once)."""
        if st["found_value"] is None:
            st["found_value"] = float(sum(float(f) for f in st["found"]))
        return st["found_value"]  # type: ignore[no-any-return]

    @opaque
    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """``unscale_(optimizer)`` unless already done, then ``optimizer.step()`` unless a gradient holds an
        inf or NaN (then the step is skipped and ``update`` lowers the scale). Returns what step returns."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs or args:
            raise RuntimeError("GradScaler.step: a closure is not supported when the scaler is enabled")
        st = self._state(optimizer)
        if st["stage"] is OptState.STEPPED:
            raise RuntimeError("GradScaler.step() has already been called since the last update()")
        if st["stage"] is OptState.READY:
            self.unscale_(optimizer)
        retval = None
        if not self._found_inf(st):
            retval = optimizer.step(**kwargs)
        st["stage"] = OptState.STEPPED
        return retval

    @opaque
    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Lower the scale after a skipped step, raise it after ``growth_interval`` clean ones (or set it)."""
        if not self._enabled:
            return
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise ValueError("GradScaler.update: new_scale must be a float or a one-element tensor that "
                                     "does not require grad")  # fmt: skip
                new_scale = new_scale.item()
            self._scale = _f32(float(new_scale))
        else:
            if not any(st["found"] for st in self._per_optimizer.values()):
                raise RuntimeError("GradScaler.update: no inf checks were recorded before update(); call "
                                   "scaler.step(optimizer) (or unscale_) first")  # fmt: skip
            if sum(self._found_inf(st) for st in self._per_optimizer.values()):
                self._scale = _f32(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    grown = _f32(self._scale * self._growth_factor)
                    if np.isfinite(grown):
                        self._scale = grown
                    self._growth_tracker = 0
                else:
                    self._growth_tracker = successful
        self._per_optimizer = {}

    # -- queries and state -----------------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's five entries (``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``,
        ``_growth_tracker``); empty when disabled. Save it after ``update``."""
        if not self._enabled:
            return {}
        return {
            "scale": self._scale,
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("GradScaler.load_state_dict: the state dict is empty (saved from a disabled "
                               "GradScaler?)")  # fmt: skip
        missing = {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"} - set(state_dict)
        if missing:
            raise KeyError(f"GradScaler.load_state_dict: missing keys {sorted(missing)}")
        self._scale = _f32(float(state_dict["scale"]))
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])

    def _capture_state(self) -> tuple[Any, ...]:
        """(what must match between two runs, the rest): ``ember.compile`` puts it back around its checked replay."""
        per = {k: {**v, "found": list(v["found"])} for k, v in self._per_optimizer.items()}
        return (self._scale, self._growth_tracker), per

    def _capture_restore(self, state: tuple[Any, ...]) -> None:
        (self._scale, self._growth_tracker), per = state
        self._per_optimizer = {k: {**v, "found": list(v["found"])} for k, v in per.items()}

    def __getstate__(self) -> dict[str, Any]:
        if self._per_optimizer:
            raise RuntimeError("a GradScaler may only be pickled at the start of an iteration or after update()")
        state = self.__dict__.copy()
        state["_scale_tensors"] = {}  # remade from the scale on first use
        return state

    def __repr__(self) -> str:
        return f"GradScaler(device={self._device!r}, scale={self.get_scale()}, enabled={self._enabled})"
