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
from ._tensor import Tensor

__all__ = ["Param", "Parameter", "Buffer", "new_param_id"]


def new_param_id() -> str:
    """A fresh, globally unique parameter id (16 hex digits)."""
    return uuid.uuid4().hex[:16]


class Param(Tensor):
    """A parameter: a leaf tensor with a stable ``id`` that survives saving and loading.

    Optimizers key their state by ``id``. Parameters require grad by default; a *buffer* (running
    statistics, step counters) is a Param with ``is_buffer=True`` that autodiff never tracks.
    """

    __slots__ = ("id", "is_buffer", "persistent")

    def __init__(
        self, data: Any, requires_grad: bool | None = None, *, id: str | None = None, is_buffer: bool = False
    ) -> None:
        src = data if isinstance(data, Tensor) else Tensor(data)
        self._init(src._data, src._backend)
        self._vc = [0]
        self.is_buffer = is_buffer
        self.persistent: bool | None = None  # set by ``Buffer(..., persistent=)``: read when assigned to a module
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

    def __deepcopy__(self, memo: Any) -> Param:
        """A new parameter (new id) with copied values: ``ModuleList([deepcopy(layer) ...])`` trains each copy."""
        out: Param = copy_leaf(self, memo, lambda t: Param(t, requires_grad=False, is_buffer=self.is_buffer))
        return out

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled with its id and kind (values, or the shared-memory block when shared)."""
        payload = tensor_payload(self)
        args = (payload, self.dtype.name, str(self.device), self.requires_grad, self.id, self.is_buffer,
                self._backend.name)  # fmt: skip
        return (_rebuild_param, args, dict(self.__dict__)) if self.__dict__ else (_rebuild_param, args)


#: PyTorch's name.
Parameter = Param


def Buffer(data: Any, *, persistent: bool = True, id: str | None = None) -> Param:  # noqa: N802 - like torch.nn.Buffer
    """A buffer: module state that is never trained (running mean, step counters); assigned to a module, it is
    saved in its ``state_dict`` unless ``persistent=False``."""
    b = Param(data, requires_grad=False, id=id, is_buffer=True)
    b.persistent = bool(persistent)
    return b


def _rebuild_param(
    payload: Any, dtype: str, device: str, requires_grad: bool, pid: str, is_buffer: bool, backend: str | None = None
) -> Any:
    p = Param(rebuild_array(payload, dtype, device, backend), requires_grad=False, id=pid, is_buffer=is_buffer)
    p.requires_grad = requires_grad
    return p
