"""``Param``: a tensor that belongs to a module's state, with a stable id (spec: ``Param`` ids).

On the tensor floor (``ember.nn.Param`` and ``ember.nn.parameter`` re-export it): tensors' copying and pickling
(``_copy.py``) and records build Params without importing ``nn``. A Param owns its copy and pickle rules: a
``deepcopy`` is a new parameter (a **new id**); a pickled Param keeps its id (the same parameter in another
process).
"""

from __future__ import annotations

import uuid
from typing import Any

from ._copy import copy_leaf, rebuild_array, tensor_payload
from ._errors import DTypeError, ShapeError
from ._tensor import Tensor

_GRAD_SLOT = Tensor.__dict__["grad"]  # Tensor's slot; Param checks what is assigned to it

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
        self._init(src._data, src._backend)
        self._vc = [0]
        self.is_buffer = is_buffer
        self.id = id or new_param_id()
        if requires_grad is None:
            requires_grad = not is_buffer and src.dtype.kind in "fc"
        if requires_grad and is_buffer:
            raise ValueError("Param: a buffer cannot require grad")
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    @property  # type: ignore[override]
    def grad(self) -> Tensor | None:
        """The accumulated gradient; assigning one of another shape or dtype raises (as in PyTorch)."""
        return _GRAD_SLOT.__get__(self, Param)  # type: ignore[no-any-return]

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"Param.grad: expected a Tensor or None, got {type(value).__name__}")
            if value.shape != self.shape:
                raise ShapeError(f"Param.grad: assigned a gradient of shape {tuple(value.shape)} to a parameter of "
                                 f"shape {tuple(self.shape)}")  # fmt: skip
            if value.dtype != self.dtype:
                raise DTypeError(f"Param.grad: assigned a gradient of dtype {value.dtype} to a parameter of dtype "
                                 f"{self.dtype}")  # fmt: skip
        _GRAD_SLOT.__set__(self, value)

    def __repr__(self) -> str:
        kind = "Buffer" if self.is_buffer else "Parameter"
        return f"{kind} containing:\n{super().__repr__()}"

    def __deepcopy__(self, memo: Any) -> Param:
        """A new parameter (new id) with copied values: ``ModuleList([deepcopy(layer) ...])`` trains each copy."""
        out: Param = copy_leaf(self, memo, lambda t: Param(t, requires_grad=False, is_buffer=self.is_buffer))
        return out

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled with its id and kind (values, or the shared-memory block when shared)."""
        payload = tensor_payload(self)
        return _rebuild_param, (payload, self.dtype.name, str(self.device), self.requires_grad, self.id, self.is_buffer)


#: PyTorch's name.
Parameter = Param


def Buffer(data: Any, *, id: str | None = None) -> Param:  # noqa: N802 - a constructor, like torch.nn.Buffer
    """A buffer: module state that is saved but never trained (running mean, step counters)."""
    return Param(data, requires_grad=False, id=id, is_buffer=True)


def _rebuild_param(payload: Any, dtype: str, device: str, requires_grad: bool, pid: str, is_buffer: bool) -> Any:
    p = Param(rebuild_array(payload, dtype, device), requires_grad=False, id=pid, is_buffer=is_buffer)
    p.requires_grad = requires_grad
    return p
