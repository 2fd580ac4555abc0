"""Containers: Sequential, ModuleList, ModuleDict, ParamList, ParamDict."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .._tensor import Tensor
from ..autograd._capture import CAPTURE
from ._fuse import run_recorded
from .module import Module
from .parameter import Param

__all__ = [
    "Container",
    "ModuleDict",
    "ModuleList",
    "ParamDict",
    "ParamList",
    "ParameterDict",
    "ParameterList",
    "Sequential",
]


class Sequential(Module):
    """Modules applied in order. ``Sequential(a, b)``, ``Sequential(OrderedDict(...))``, ``seq.add(m)``."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.register_module(name, m)
        else:
            for m in args:
                self.add(m)

    def add(self, module: Module) -> Sequential:
        """Append a module (the spec's ``add``); returns self for chaining."""
        if not isinstance(module, Module):
            raise TypeError(f"Sequential.add: expected a Module, got {type(module).__name__}")
        self.register_module(str(len(self._modules)), module)
        return self

    append = add

    def forward(self, input: Any) -> Any:
        if CAPTURE.tracer is not None:  # ember.compile records: exact rewrites of the layers (``_fuse.py``)
            return run_recorded([m for m in self._modules.values() if m is not None], input)
        for m in self._modules.values():
            if m is not None:
                input = m(input)
        return input

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(m for m in self._modules.values() if m is not None)

    def __getitem__(self, idx: int | slice) -> Any:
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(items[idx]))
        if not -len(items) <= idx < len(items):
            raise IndexError(f"Sequential index {idx} is out of range for {len(items)} modules")
        return items[idx][1]

    def __setitem__(self, idx: int, module: Module) -> None:
        name = list(self._modules)[idx]
        self._modules[name] = module

    def __delitem__(self, idx: int) -> None:
        items = [m for i, m in enumerate(self._modules.values()) if i != idx % len(self)]
        self._modules.clear()
        for m in items:
            self.add(m)  # type: ignore[arg-type]


class ModuleList(Module):
    """A list of sub-modules, registered as ``0``, ``1``, ... (no forward of its own)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        for m in modules or []:
            self.append(m)

    def append(self, module: Module) -> ModuleList:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList.append: expected a Module, got {type(module).__name__}")
        self.register_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for m in items:
            self.append(m)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(m for m in self._modules.values() if m is not None)

    def __getitem__(self, idx: int | slice) -> Any:
        items = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(items[idx])  # type: ignore[arg-type]
        return items[idx]

    def __setitem__(self, idx: int, module: Module) -> None:
        self._modules[list(self._modules)[idx]] = module


class ModuleDict(Module):
    """A dict of sub-modules with string keys."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Adds or replaces entries from a mapping (a ``ModuleDict`` too) or an iterable of key/module pairs."""
        if isinstance(modules, (Mapping, ModuleDict)):
            for k, m in modules.items():
                self[k] = m
            return
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleDict.update should be called with an iterable of key/value pairs, "
                f"but got {type(modules).__name__}"
            )
        for j, pair in enumerate(modules):
            if not isinstance(pair, Iterable):
                raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; is{type(pair).__name__}")
            kv: list[Any] = list(pair)
            if len(kv) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length {len(kv)}; 2 is required")
            self[kv[0]] = kv[1]

    def pop(self, key: str) -> Module:
        """Removes ``key`` and returns its module (KeyError when absent)."""
        m = self[key]
        del self._modules[key]
        return m

    def clear(self) -> None:
        """Removes every entry."""
        self._modules.clear()

    def __getitem__(self, key: str) -> Module:
        m = self._modules.get(key)
        if m is None:
            raise KeyError(f"ModuleDict has no key {key!r}; keys: {list(self._modules)}")
        return m

    def __setitem__(self, key: str, module: Module) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict[{key!r}]: expected a Module, got {type(module).__name__}")
        self._modules[key] = module

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def keys(self) -> Any:
        return self._modules.keys()

    def values(self) -> Any:
        return self._modules.values()

    def items(self) -> Any:
        return self._modules.items()


def _as_param(value: Any, where: str) -> Param:
    if isinstance(value, Param):
        return value
    if isinstance(value, Tensor):
        return Param(value)
    raise TypeError(f"{where}: expected a Param or Tensor, got {type(value).__name__}")


class ParamList(Module):
    """A list of parameters, registered as ``0``, ``1``, ..."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        for v in values or []:
            self.append(v)

    def append(self, value: Any) -> ParamList:
        self._params[str(len(self._params))] = _as_param(value, "ParamList.append")
        return self

    def extend(self, values: Iterable[Any]) -> ParamList:
        for v in values:
            self.append(v)
        return self

    def __len__(self) -> int:
        return len(self._params)

    def __iter__(self) -> Iterator[Param]:
        return iter(p for p in self._params.values() if p is not None)

    def __getitem__(self, idx: int) -> Param:
        return list(self._params.values())[idx]  # type: ignore[return-value]

    def __setitem__(self, idx: int, value: Any) -> None:
        self._params[list(self._params)[idx]] = _as_param(value, "ParamList")

    def extra_repr(self) -> str:
        return ", ".join(f"({k}): shape {tuple(p.shape)}" for k, p in self._params.items() if p is not None)


class ParamDict(Module):
    """A dict of parameters with string keys."""

    def __init__(self, parameters: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        for k, v in (parameters or {}).items():
            self[k] = v

    def __getitem__(self, key: str) -> Param:
        p = self._params.get(key)
        if p is None:
            raise KeyError(f"ParamDict has no key {key!r}; keys: {list(self._params)}")
        return p

    def __setitem__(self, key: str, value: Any) -> None:
        self._params[key] = _as_param(value, f"ParamDict[{key!r}]")

    def __contains__(self, key: object) -> bool:
        return key in self._params

    def __len__(self) -> int:
        return len(self._params)

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def keys(self) -> Any:
        return self._params.keys()

    def items(self) -> Any:
        return self._params.items()

    def values(self) -> Any:
        return self._params.values()

    def extra_repr(self) -> str:
        return ", ".join(f"({k}): shape {tuple(p.shape)}" for k, p in self._params.items() if p is not None)


ParameterList = ParamList
ParameterDict = ParamDict


class Container(Module):
    """PyTorch's deprecated ``Container(name=module, ...)``: a module holding the given sub-modules."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        import warnings

        warnings.warn("nn.Container is deprecated. All of it's functionality is now implemented in nn.Module. "
                      "Subclass that instead.", UserWarning, stacklevel=2)  # fmt: skip
        for name, m in kwargs.items():
            self.register_module(name, m)
