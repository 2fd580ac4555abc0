"""The optimizer's per-parameter state, indexable by the parameter itself as in PyTorch.

Ember keys the state by each parameter's stable ``id`` (Burn's ``ParamId``) and keeps raw backend arrays in it,
which is what the update kernels, ``state_dict`` and ``ember.compile``'s guards read. PyTorch programs index it
with the parameter tensor (``opt.state[p]["exp_avg"]``) and get tensors: :class:`OptimizerState` takes either
key, and for a tensor key returns a :class:`ParamState` view whose arrays come back as tensors sharing the
optimizer's memory (an in-place change to one changes the optimizer's state, as in PyTorch).
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

from .._tensor import Tensor


def param_key(p: Tensor) -> str:
    """The state's key of parameter ``p``: its ``id``, or one made from the object for a plain tensor."""
    pid = getattr(p, "id", None)
    return pid if pid is not None else f"tensor-{id(p)}"


def _is_array(v: Any) -> bool:
    return hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, Tensor)


class ParamState(MutableMapping[str, Any]):
    """One parameter's state as PyTorch shows it: arrays as tensors sharing the optimizer's memory, numbers as
    they are; Ember's private entries (``_``-prefixed) hidden. Writing a tensor stores its array."""

    __slots__ = ("_made", "_param", "_raw")

    def __init__(self, raw: dict[str, Any] | None, param: Tensor) -> None:
        self._raw, self._param = raw if raw is not None else {}, param
        self._made = raw is not None  # None: the parameter has no state yet, and this view cannot make one

    def __getitem__(self, name: str) -> Any:
        if name.startswith("_"):
            raise KeyError(name)
        v = self._raw[name]
        return Tensor._make(v, self._raw.get("_backend") or self._param._backend) if _is_array(v) else v

    def __setitem__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            raise KeyError(f"optimizer state: {name!r} is Ember's private entry, not a state value")
        if not self._made:
            raise KeyError(f"optimizer state: cannot set {name!r}: the parameter has no state yet (the optimizer "
                           "makes it at the parameter's first step)")  # fmt: skip
        if isinstance(value, Tensor):
            backend = self._raw.get("_backend") or self._param._backend
            if value._backend is not backend:
                raise ValueError(f"optimizer state {name!r}: the tensor is on {value.device}, the state on "
                                 f"{backend.device}; move it with .to() first")  # fmt: skip
            value = value._data
        self._raw[name] = value

    def __delitem__(self, name: str) -> None:
        if name.startswith("_"):
            raise KeyError(name)
        del self._raw[name]

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._raw if not k.startswith("_"))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class OptimizerState(dict):  # type: ignore[type-arg]
    """``{param_id: {name: array or number}}``, also indexable by the parameter tensor (PyTorch's form): then it
    gives a :class:`ParamState` view; for a parameter that has taken no step yet an empty one, as PyTorch's
    ``defaultdict`` reads (one that cannot be written: Ember's optimizer makes the state at the first step)."""

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, Tensor):
            return ParamState(dict.get(self, param_key(key)), key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        if isinstance(key, Tensor):
            return self[key] if dict.__contains__(self, param_key(key)) else default
        return dict.get(self, key, default)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, param_key(key) if isinstance(key, Tensor) else key)
