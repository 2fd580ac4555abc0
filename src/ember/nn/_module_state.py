"""``Module.state_dict`` / ``load_state_dict`` and their hooks, with PyTorch's walk (a mixin of ``Module``).

Both walk the tree as ``torch.nn.Module`` does: every module saves (``_save_to_state_dict``) or loads
(``_load_from_state_dict``) its own parameters, persistent buffers and extra state, then its children, so
the hooks run in PyTorch's order with PyTorch's arguments: state-dict pre-hooks ``(module, prefix,
keep_vars)`` before a module saves, post-hooks ``(module, state_dict, prefix, local_metadata)`` after its
children; load pre-hooks ``(module?, state_dict, prefix, local_metadata, strict, missing_keys,
unexpected_keys, error_msgs)`` before a module loads (they may edit the lists), post-hooks ``(module,
incompatible_keys)`` after its children (they may clear the lists; ``strict`` is checked afterwards).
Values are copied with records' one routine (``record/_load.store_value``).
"""

from __future__ import annotations

import functools
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .._hooks import RemovableHandle
from .._param import Param
from .._tensor import Tensor
from ..autograd._grad_mode import no_grad
from ..record._load import IncompatibleKeys, store_value
from ._module_hooks import _add_hook
from ._uninitialized import is_lazy

if TYPE_CHECKING:
    from .module import Module

__all__ = ["ModuleState"]

_EXTRA = "_extra_state"
_LAZY_COPY = ('While copying the parameter named "{}": an uninitialized parameter or buffer cannot be copied to or '
              "from an initialized one; call forward first")  # fmt: skip


class _WrappedHook:
    """A load pre-hook registered with ``with_module``: called with the module (held weakly) first."""

    def __init__(self, hook: Callable[..., Any], module: Any = None) -> None:
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = module is not None
        if module is not None:
            self.module = weakref.ref(module)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self) -> dict[str, Any]:  # a copy of the module gets hooks bound to the copy
        state = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            state["module"] = self.module()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.hook, self.with_module = state["hook"], state["with_module"]
        if self.with_module:
            self.module = weakref.ref(state["module"])


def _hooks(module: Any, name: str) -> dict[int, Any]:
    """The module's hook table ``name`` (made on first use, so modules built without them still work)."""
    table: dict[int, Any] = module.__dict__.setdefault(name, OrderedDict())
    return table


def _has_own(module: Any, name: str) -> bool:
    return getattr(type(module), name) is not getattr(ModuleState, name)


class ModuleState:
    """State-dict methods of ``Module`` (its base class): hooks, extra state, PyTorch's recursive walk."""

    _version: int = 1

    if TYPE_CHECKING:
        _params: dict[str, Param | None]
        _modules: dict[str, Module | None]
        _non_persistent: set[str]

    # -- hooks -------------------------------------------------------------------------------------
    def register_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` before this module saves its state into ``state_dict()``."""
        return _add_hook(_hooks(self, "_state_dict_pre_hooks"), hook)

    def register_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` after this module and its children saved; it
        may edit ``state_dict`` in place and must return None."""
        hook._from_public_api = True  # type: ignore[attr-defined]
        return _add_hook(_hooks(self, "_state_dict_hooks"), hook)

    def _register_state_dict_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """The older post-hook: like ``register_state_dict_post_hook``, but a returned dict replaces the
        state dict (respected on the module ``state_dict()`` was called on)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was "
                               "previously registered via register_state_dict_post_hook")  # fmt: skip
        return _add_hook(_hooks(self, "_state_dict_hooks"), hook)

    def _register_load_state_dict_pre_hook(
        self, hook: Callable[..., Any], with_module: bool = False
    ) -> RemovableHandle:
        """A load pre-hook, called without the module unless ``with_module``."""
        return _add_hook(_hooks(self, "_load_state_dict_pre_hooks"), _WrappedHook(hook, self if with_module else None))

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` before this module loads; it may edit the state dict and the lists."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` after this module and its children loaded; it may edit the key
        lists in place (``strict`` is checked afterwards) and must return None."""
        return _add_hook(_hooks(self, "_load_state_dict_post_hooks"), hook)

    # -- extra state -------------------------------------------------------------------------------
    def get_extra_state(self) -> Any:
        """Override (with ``set_extra_state``) to save any picklable value under ``<prefix>_extra_state``."""
        raise RuntimeError("Module.get_extra_state() is only called on a module that overrides it")

    def set_extra_state(self, state: Any) -> None:
        """Override (with ``get_extra_state``) to restore the value saved under ``<prefix>_extra_state``."""
        raise RuntimeError("Module.set_extra_state() is only called on a module that overrides it")

    # -- saving ------------------------------------------------------------------------------------
    def _local_state(self) -> dict[str, Param]:
        """This module's parameters, then its persistent buffers (PyTorch's order), by local name."""
        items = [(k, p) for k, p in self._params.items() if p is not None and k not in self._non_persistent]
        return dict([kp for kp in items if not kp[1].is_buffer] + [kp for kp in items if kp[1].is_buffer])

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        """Put this module's own state (not its children's) into ``destination``."""
        for name, p in self._local_state().items():
            destination[prefix + name] = p if keep_vars or is_lazy(p) else p.detach()
        if _has_own(self, "get_extra_state"):
            destination[prefix + _EXTRA] = self.get_extra_state()

    def state_dict(self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False) -> Any:
        """Parameters, persistent buffers and extra state by dotted name (PyTorch's keys and order).

        Positional ``destination, prefix, keep_vars`` are accepted with PyTorch's FutureWarning.
        """
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead.", FutureWarning, stacklevel=2)
            destination = args[0] if destination is None else destination
            prefix = args[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in list(self.__dict__.get("_state_dict_pre_hooks", {}).values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in list(self.__dict__.get("_state_dict_hooks", {}).values()):
            out = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if out is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif out is not None:
                destination = out
        return destination

    # -- loading -----------------------------------------------------------------------------------
    def _load_from_state_dict(
        self,
        state_dict: dict[str, Any],
        prefix: str,
        local_metadata: dict[str, Any],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        """Load this module's own state (not its children's) from ``state_dict``, reporting into the lists."""
        for hook in list(self.__dict__.get("_load_state_dict_pre_hooks", {}).values()):
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        local = self._local_state()
        assign = bool(local_metadata.get("assign_to_params_buffers", False))
        for name, p in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            if is_lazy(p) or is_lazy(state_dict[key]):
                if not (is_lazy(p) and is_lazy(state_dict[key])):  # (both placeholders: nothing to copy)
                    error_msgs.append(_LAZY_COPY.format(key))
                continue
            v = _as_tensor(state_dict[key])
            if v is None:
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                                  f"object from checkpoint but received {type(state_dict[key])}")  # fmt: skip
                continue
            if p.ndim == 0 and v.ndim == 1 and v.shape[0] == 1:  # (PyTorch's 0.3 checkpoints)
                v = v[0]
            if tuple(v.shape) != tuple(p.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {tuple(v.shape)} from "
                                  f"checkpoint, the shape in current model is {tuple(p.shape)}.")  # fmt: skip
                continue
            if assign:  # PyTorch's: the parameter takes the value itself (its memory, device and dtype)
                with no_grad():
                    p._data, p._backend = v._data, v._backend
                    p._vc[0] += 1
                continue
            if p.is_meta and not v.is_meta:
                warnings.warn(f"for {key}: copying from a non-meta parameter in the checkpoint to a meta parameter in "
                              "the current model, which is a no-op. (Did you mean to pass `assign=True` to assign "
                              "items in the state dictionary to their corresponding key in the module instead of "
                              "copying them in place?)", UserWarning, stacklevel=3)  # fmt: skip
                continue
            try:
                with no_grad():
                    store_value(p, v, assign)
            except Exception as ex:  # (PyTorch reports a failed copy among the errors)
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{tuple(p.shape)} and whose dimensions in the checkpoint are {tuple(v.shape)}, "
                                  f"an exception occurred : {ex.args}.")  # fmt: skip
        extra = prefix + _EXTRA
        if _has_own(self, "set_extra_state"):
            if extra in state_dict:
                self.set_extra_state(state_dict[extra])
            elif strict:
                missing_keys.append(extra)
        elif strict and extra in state_dict:
            unexpected_keys.append(extra)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra:
                    head = key[len(prefix) :].split(".", 1)
                    if (head[0] not in self._modules) if len(head) > 1 else (head[0] not in local):
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """Copy values (Tensors, NumPy arrays, or torch tensors) into the parameters and buffers in place.

        Values are converted to each parameter's dtype and device; with ``assign`` each parameter takes the value
        itself instead (its memory, device and dtype: how a model built on the meta device gets its weights).
        Problems (missing or unexpected keys with ``strict``, shape mismatches, values that are not tensors) are
        reported together in one ``RuntimeError``, as PyTorch does; returns ``(missing_keys, unexpected_keys)``.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"load_state_dict for {type(self).__name__}: expected a mapping of parameter names to "
                            f"tensors (what state_dict() returns), got {type(state_dict).__name__}")  # fmt: skip
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        sd: Any = OrderedDict(state_dict)
        if metadata is not None:
            sd._metadata = metadata

        def load(module: Any, local_sd: dict[str, Any], prefix: str = "") -> None:
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_sd, prefix, local_metadata, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    p = prefix + name + "."
                    load(child, {k: v for k, v in local_sd.items() if k.startswith(p)}, p)
            keys = IncompatibleKeys(missing, unexpected)
            for hook in list(module.__dict__.get("_load_state_dict_post_hooks", {}).values()):
                if hook(module, keys) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be modified, "
                                         "it should be done inplace.")  # fmt: skip

        load(self, sd)
        if strict:
            for what, keys in (("Unexpected", unexpected), ("Missing", missing)):
                if keys:
                    errors.insert(0, f"{what} key(s) in state_dict: " + ", ".join(f'"{k}"' for k in keys) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return IncompatibleKeys(missing, unexpected)


def _as_tensor(v: Any) -> Tensor | None:
    """A state-dict value as a Tensor (Ember or torch tensors, arrays, numbers); None for anything else."""
    if isinstance(v, Tensor):
        return v
    if hasattr(v, "detach") and hasattr(v, "numpy"):  # a torch tensor
        v = v.detach().cpu()
        if str(getattr(v, "dtype", "")) == "torch.bfloat16":
            v = v.float()
        v = v.numpy()
    if isinstance(v, (np.ndarray, np.generic, list, float, int)):  # (Ember also takes arrays and numbers)
        return Tensor(np.asarray(v))
    return None
