"""``copy.deepcopy`` and in-process pickling of tensors and parameters (modules follow from these).

- ``copy.deepcopy(t)``: a new leaf with copied values, the same ``requires_grad`` and a deep copy of
  ``.grad``; a non-leaf tensor raises, as in PyTorch (detach it first). A ``Param``'s copy is a ``Param``
  with a **new id**: a copy is a new parameter (``nn.ModuleList([copy.deepcopy(layer) ...])`` puts copies
  under one optimizer, which keys its state by id). Within one ``deepcopy`` call shared tensors stay
  shared (tied weights stay tied).
- ``pickle`` (multiprocessing queues, ``spawn`` arguments): values, dtype, device and ``requires_grad``
  travel (not ``.grad``, as in PyTorch); a ``Param`` keeps its id (it is the same parameter in another
  process); a tensor in shared memory (``share_memory_()``) is rebuilt onto the same memory.

Pickle is for moving objects between trusted processes; Ember's file loaders unpickle only what
``weights_only`` allows, or anything when the caller passes ``weights_only=False`` (``_pickled.py``).
"""

from __future__ import annotations

from typing import Any

from ._tensor import Tensor

__all__ = ["deepcopy_tensor", "reduce_tensor"]


def deepcopy_tensor(t: Tensor, memo: dict[int, Any]) -> Tensor:
    import copy

    from .autograd._grad_mode import no_grad
    from .nn.parameter import Param

    if not t.is_leaf:
        raise RuntimeError(
            "deepcopy: only leaf tensors (made by the user, not by an operation) support copy.deepcopy; "
            "deep-copy t.detach() instead"
        )
    with no_grad():
        data = t.detach().clone()._data
    new: Tensor
    if isinstance(t, Param):
        new = Param(Tensor._make(data, t._backend), requires_grad=False, is_buffer=t.is_buffer)
    else:
        new = Tensor._make(data, t._backend)
    new.requires_grad = t.requires_grad
    memo[id(t)] = new
    if t.grad is not None:
        new.grad = copy.deepcopy(t.grad, memo)
    return new


def reduce_tensor(t: Tensor) -> tuple[Any, ...]:
    """``__reduce_ex__``: rebuild from a NumPy copy of the values, or from shared memory when shared."""
    from .multiprocessing._shared import shared_spec
    from .nn.parameter import Param

    spec = shared_spec(t._data)
    payload = spec if spec is not None else t._backend.to_numpy(t._data)
    if isinstance(t, Param):
        return _rebuild_param, (payload, t.dtype.name, str(t.device), t.requires_grad, t.id, t.is_buffer)
    return _rebuild_tensor, (payload, t.dtype.name, str(t.device), t.requires_grad)


def _array(payload: Any, dtype: str, device: str) -> Tensor:
    from ._creation import tensor
    from .multiprocessing._shared import attach

    if isinstance(payload, tuple):  # a shared-memory spec: the backend serving the device wraps the block
        from .backends import get_backend

        be = get_backend(device)
        return Tensor._make(be.from_numpy(attach(payload)), be)
    return tensor(payload, dtype=dtype, device=device)


def _rebuild_tensor(payload: Any, dtype: str, device: str, requires_grad: bool) -> Tensor:
    t = _array(payload, dtype, device)
    t.requires_grad = requires_grad
    return t


def _rebuild_param(payload: Any, dtype: str, device: str, requires_grad: bool, pid: str, is_buffer: bool) -> Any:
    from .nn.parameter import Param

    p = Param(_array(payload, dtype, device), requires_grad=False, id=pid, is_buffer=is_buffer)
    p.requires_grad = requires_grad
    return p
