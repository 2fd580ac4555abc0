"""PyTorch's private per-module dicts, which programs read and edit (``module._parameters``, ``_buffers``,
``_forward_pre_hooks``, ...): views of what Ember keeps in one dict of ``Param``s (``_params``) and its hook dicts."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from .._param import Param
from .._tensor import Tensor

if TYPE_CHECKING:
    from .module import Module


class ParamView(MutableMapping[str, Any]):
    """``module._parameters`` (``buffers=False``) or ``module._buffers``: name -> tensor (or None), in
    registration order; setting registers, deleting unregisters."""

    __slots__ = ("_buffers", "_module")

    def __init__(self, module: Module, buffers: bool) -> None:
        self._module, self._buffers = module, buffers

    def _mine(self, name: str) -> bool:
        m = self._module
        if name not in m._params:
            return False
        p = m._params[name]
        if p is None:
            return (name in m.__dict__.get("_null_buffers", ())) == self._buffers
        return p.is_buffer == self._buffers

    def __getitem__(self, name: str) -> Any:
        if not self._mine(name):
            raise KeyError(name)
        return self._module._params[name]

    def __setitem__(self, name: str, value: Any) -> None:
        m = self._module
        if self._buffers:
            m.register_buffer(name, value)
        elif value is None or isinstance(value, Param):
            if self._mine(name):  # replaced in place: the order stays (an OrderedDict in PyTorch)
                m._params[name] = value
            else:
                m.register_parameter(name, value)
        elif isinstance(value, Tensor):
            raise TypeError(f"_parameters[{name!r}]: expected a Parameter or None, got a Tensor")
        else:
            raise TypeError(f"_parameters[{name!r}]: expected a Parameter or None, got {type(value).__name__}")

    def __delitem__(self, name: str) -> None:
        if not self._mine(name):
            raise KeyError(name)
        delattr(self._module, name)

    def __iter__(self) -> Iterator[str]:
        return iter([n for n in self._module._params if self._mine(n)])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"{'_buffers' if self._buffers else '_parameters'}({dict(self.items())!r})"


class ModuleDicts:
    """The properties of ``Module`` (a mixin) that serve PyTorch's private dict names."""

    if TYPE_CHECKING:
        _pre_hooks: dict[int, Any]
        _fwd_hooks: dict[int, Any]
        _bwd_hooks: dict[int, Any]
        _non_persistent: set[str]

    @property
    def _parameters(self) -> ParamView:
        return ParamView(self, buffers=False)  # type: ignore[arg-type]

    @property
    def _buffers(self) -> ParamView:
        return ParamView(self, buffers=True)  # type: ignore[arg-type]

    @property
    def _forward_pre_hooks(self) -> dict[int, Any]:
        return self._pre_hooks

    @property
    def _forward_hooks(self) -> dict[int, Any]:
        return self._fwd_hooks

    @property
    def _backward_hooks(self) -> dict[int, Any]:
        return self._bwd_hooks

    @property
    def _non_persistent_buffers_set(self) -> set[str]:
        """The names of this module's own buffers kept out of its state_dict (the set itself: editing it counts)."""
        return self._non_persistent
