"""``Module`` methods PyTorch code calls that the core of ``module.py`` does without: backward pre-hooks, buffer and
sub-module lookup by dotted path, in-place compilation, ``to_empty`` and ``type``. A mixin of ``Module`` (kept
apart for its size)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._hooks import RemovableHandle
from .._param import Param
from ..autograd._grad_mode import no_grad
from ._module_hooks import PreHook, _add_hook

if TYPE_CHECKING:
    from .module import Module


class ModuleExtras:
    """``get_buffer``, ``set_submodule``, ``compile``, ``to_empty`` and ``type`` of ``Module`` (its base class)."""

    if TYPE_CHECKING:
        _params: dict[str, Param | None]
        _modules: dict[str, Module | None]
        _bwd_hooks: dict[int, Any]

        def get_submodule(self, target: str) -> Module: ...
        def _named_state(self, prefix: str, recurse: bool, buffers: bool) -> Any: ...
        def to(self, *args: Any, **kwargs: Any) -> Module: ...
        def forward(self, *args: Any, **kwargs: Any) -> Any: ...

    def register_full_backward_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, grad_output)`` before the module's input gradients are computed; it may return a new
        ``grad_output``."""
        return _add_hook(self._bwd_hooks, PreHook(hook))

    def get_buffer(self, target: str) -> Param:
        """The buffer at dotted path ``target`` (``"bn.running_mean"``)."""
        mod, _, name = target.rpartition(".")
        owner = self.get_submodule(mod)
        b = owner._params.get(name)
        if b is None or not b.is_buffer:
            raise AttributeError(f"{type(owner).__name__} has no buffer {name!r} (looking up {target!r})")
        return b

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put ``module`` at dotted path ``target`` (its parent must exist; ``strict``: the name too)."""
        if not target:
            raise ValueError("set_submodule: cannot set the module itself (an empty target)")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and name not in parent._modules:
            raise AttributeError(f"{type(parent).__name__} has no sub-module {name!r} (strict set of {target!r})")
        setattr(parent, name, module)

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Compile this module's forward in place (``ember.compile``'s arguments); later calls run the capture."""
        compiled = importlib.import_module("ember._compile").compile  # (a floor above nn: loaded when called)
        object.__setattr__(self, "forward", compiled(self.forward, *args, **kwargs))

    def to_empty(self, *, device: Any = None, recurse: bool = True) -> Module:
        """Give every parameter and buffer (of the sub-modules too with ``recurse``) new, uninitialised memory on
        ``device``, keeping shapes, dtypes and parameter objects: how a model built on the meta device gets
        storage (then ``reset_parameters()`` or ``load_state_dict``); gradients get new memory too."""
        from .._creation import empty_like

        with no_grad():
            for _, p in [*self._named_state("", recurse, False), *self._named_state("", recurse, True)]:
                new = empty_like(p, device=device)
                p._data, p._backend = new._data, new._backend
                p._vc[0] += 1
                if p.grad is not None:
                    p._grad = empty_like(p.grad, device=device)
        return self  # type: ignore[return-value]

    def type(self, dst_type: Any) -> Module:
        """Cast every parameter and buffer to ``dst_type``."""
        return self.to(dst_type)
