"""``copy.deepcopy`` and in-process pickling of tensors (``Param`` builds its own rules on these, ``_param.py``).

- ``copy.deepcopy(t)``: a new leaf with copied values, the same ``requires_grad`` and a deep copy of
  ``.grad``; a non-leaf tensor raises, as in PyTorch (detach it first). Within one ``deepcopy`` call
  shared tensors stay shared (tied weights stay tied).
- ``pickle`` (multiprocessing queues, ``spawn`` arguments): values, dtype, device (with the backend that served
  it, kept where it serves the device on unpickling) and ``requires_grad`` travel (not ``.grad``, as in
  PyTorch); a tensor in shared memory (``share_memory_()``) is rebuilt onto the same memory.

Pickle is for moving objects between trusted processes; Ember's file loaders unpickle only what
``weights_only`` allows, or anything when the caller passes ``weights_only=False`` (``_pickled.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from ._errors import DeviceError
from ._tensor import Tensor, _to_array
from .backends import Backend, get, get_backend
from .multiprocessing._shared import attach, shared_spec

__all__ = ["copy_leaf", "deepcopy_tensor", "rebuild_array", "reduce_tensor", "tensor_payload"]


def copy_leaf(t: Tensor, memo: dict[int, Any], wrap: Callable[[Tensor], Tensor]) -> Any:
    """``copy.deepcopy`` of leaf ``t``: ``wrap`` of a new tensor with copied values, ``t``'s ``requires_grad``
    and a deep copy of ``.grad`` (``wrap`` makes the kind: a Tensor, or a Param with a new id)."""
    if not t.is_leaf:
        raise RuntimeError(
            "deepcopy: only leaf tensors (made by the user, not by an operation) support copy.deepcopy; "
            "deep-copy t.detach() instead"
        )
    data = t.detach().clone()._data  # a detached tensor records no graph
    new = wrap(Tensor._make(data, t._backend))
    new.requires_grad = t.requires_grad
    memo[id(t)] = new
    if t.grad is not None:
        new.grad = copy.deepcopy(t.grad, memo)
    return new


def deepcopy_tensor(t: Tensor, memo: dict[int, Any]) -> Tensor:
    out: Tensor = copy_leaf(t, memo, lambda x: x)
    if t.__dict__:  # a program's own attributes are deep-copied too (PyTorch's Tensor does; its Parameter does not)
        out.__dict__.update(copy.deepcopy(t.__dict__, memo))
    return out


def tensor_payload(t: Tensor) -> Any:
    """What a pickle carries of ``t``'s values: the shared-memory spec when shared, else a NumPy copy."""
    spec = shared_spec(t._data)
    return spec if spec is not None else t._backend.to_numpy(t._data)


def reduce_tensor(t: Tensor) -> tuple[Any, ...]:
    """``__reduce_ex__``: rebuild from a NumPy copy of the values, or from shared memory when shared; a program's own
    attributes (``t.__dict__``) come back too, as PyTorch's."""
    args = (tensor_payload(t), t.dtype.name, str(t.device), t.requires_grad, t._backend.name)
    return (_rebuild_tensor, args, dict(t.__dict__)) if t.__dict__ else (_rebuild_tensor, args)


def _home(device: str, backend: str | None) -> Backend:
    """Where a pickled tensor comes back: its device on the backend that held it, when that one serves the device
    here (torch-CPU stays torch-CPU beside NumPy's CPU, as a cuda tensor stays on cuda); else the device's backend."""
    if backend is not None:
        try:
            return get(backend, device)
        except DeviceError:  # not installed here, or not serving that device: the values still come back
            pass
    return get_backend(device)


def rebuild_array(payload: Any, dtype: str, device: str, backend: str | None = None) -> Tensor:
    """The tensor a ``tensor_payload`` describes (on the same shared memory when it was shared), on ``device``
    served by ``backend`` where it can be (``_home``)."""
    be = _home(device, backend)
    if isinstance(payload, tuple):  # a shared-memory spec: the backend serving the device wraps the block
        return Tensor._make(be.from_numpy(attach(payload)), be)
    return Tensor._make(*_to_array(payload, dtype, be))


def _rebuild_tensor(payload: Any, dtype: str, device: str, requires_grad: bool, backend: str | None = None) -> Tensor:
    t = rebuild_array(payload, dtype, device, backend)
    t.requires_grad = requires_grad
    return t
