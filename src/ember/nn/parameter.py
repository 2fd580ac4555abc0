"""``Param``: a tensor that belongs to a module's state, with a stable id (spec: ``Param`` ids)."""

from __future__ import annotations

import uuid
from typing import Any

from .._tensor import Tensor

__all__ = ["Param", "Parameter", "Buffer", "new_param_id"]


def new_param_id() -> str:
    """A fresh, globally unique parameter id (16 hex digits)."""
    return uuid.uuid4().hex[:16]


class Param(Tensor):
    """A parameter: a leaf tensor with a stable ``id`` that survives saving and loading.

    Optimizers key their state by ``id``. Parameters require grad by default; a *buffer* (running
    statistics, step counters) is a Param with ``is_buffer=True`` that autodiff never tracks.
    """

    __slots__ = ("id", "is_buffer")

    def __init__(
        self, data: Any, requires_grad: bool | None = None, *, id: str | None = None, is_buffer: bool = False
    ) -> None:
        src = data if isinstance(data, Tensor) else Tensor(data)
        self._data = src._data
        self._backend = src._backend
        self._grad = None
        self._creator = None
        self._out_idx = 0
        self._vc = [0]
        self._view = None
        self._retain = False
        self._hooks = None
        self.is_buffer = is_buffer
        self.id = id or new_param_id()
        if requires_grad is None:
            requires_grad = not is_buffer and src.dtype.kind in "fc"
        if requires_grad and is_buffer:
            raise ValueError("Param: a buffer cannot require grad")
        self._requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        kind = "Buffer" if self.is_buffer else "Parameter"
        return f"{kind} containing:\n{super().__repr__()}"


#: PyTorch's name.
Parameter = Param


def Buffer(data: Any, *, id: str | None = None) -> Param:  # noqa: N802 - a constructor, like torch.nn.Buffer
    """A buffer: module state that is saved but never trained (running mean, step counters)."""
    return Param(data, requires_grad=False, id=id, is_buffer=True)
