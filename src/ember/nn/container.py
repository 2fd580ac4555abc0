"""Containers: Sequential, ModuleList, ModuleDict, ParamList, ParamDict."""

from __future__ import annotations

import operator
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


def _abs_index(n: int, idx: Any) -> int:
    """``idx`` (an int or ``__index__``) as a position in ``range(n)``, or PyTorch's IndexError."""
    i = operator.index(idx)
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of range")
    return i % n


def _child(module: Any, name: str) -> Module | None:
    """``module`` if it may be a child (a Module or None), else PyTorch's TypeError."""
    if module is not None and not isinstance(module, Module):
        raise TypeError(f"cannot assign '{type(module).__name__}' as child module '{name}' (Module or None expected)")
    return module  # type: ignore[no-any-return]


def _renumber(modules: dict[str, Module | None]) -> None:
    """Name the entries ``0``, ``1``, ... in order (in place: the dict counts its writes)."""
    values = list(modules.values())
    modules.clear()
    modules.update((str(i), m) for i, m in enumerate(values))


class Sequential(Module):
    """Modules applied in order. ``Sequential(a, b)``, ``Sequential(OrderedDict(...))``, ``seq.add(m)``.

    PyTorch's list methods: indexing and slicing, ``del`` (the rest renumbered ``0``, ``1``, ...), ``pop``,
    ``insert``, ``extend``, ``+``/``+=`` with another Sequential, ``*``/``*=`` by a positive int (the same modules
    repeated, shared).
    """

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
            return self.__class__(OrderedDict(items[idx]))
        return items[_abs_index(len(items), idx)][1]

    def __setitem__(self, idx: int, module: Module) -> None:
        name = list(self._modules)[_abs_index(len(self._modules), idx)]
        setattr(self, name, module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for key in keys[idx] if isinstance(idx, slice) else [keys[_abs_index(len(keys), idx)]]:
            delattr(self, key)
        _renumber(self._modules)  # as PyTorch: names become 0, 1, ... after a deletion

    def pop(self, key: int | slice) -> Any:
        """Removes and returns the module (or Sequential of modules) at ``key``."""
        v = self[key]
        del self[key]
        return v

    def insert(self, index: int, module: Module) -> Sequential:
        """Puts ``module`` before position ``index`` (``len(self)`` appends); later ones move up by one."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")  # (PyTorch's type)
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        index = index + n if index < 0 else index
        values = list(self._modules.values())
        values.insert(index, module)
        self._modules.clear()
        self._modules.update((str(i), m) for i, m in enumerate(values))
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        """Appends each module of ``sequential``."""
        for layer in sequential:
            self.append(layer)
        return self

    def _other(self, other: Any) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return other

    def __add__(self, other: Sequential) -> Sequential:
        return Sequential(*self, *self._other(other))

    def __iadd__(self, other: Sequential) -> Sequential:
        return self.extend(list(self._other(other)))

    def _factor(self, other: Any) -> int:
        if not isinstance(other, int) or isinstance(other, bool):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        return other

    def __mul__(self, other: int) -> Sequential:
        return Sequential(*(list(self) * self._factor(other)))

    __rmul__ = __mul__

    def __imul__(self, other: int) -> Sequential:
        return self.extend(list(self) * (self._factor(other) - 1))


class ModuleList(Module):
    """A list of sub-modules, registered as ``0``, ``1``, ... (no forward of its own); entries may be None, as in
    PyTorch. ``del``/``pop`` renumber the rest; ``+`` makes a new list, ``+=`` extends."""

    def __init__(self, modules: Iterable[Module | None] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def append(self, module: Module | None) -> ModuleList:
        """Appends ``module`` (a Module or None)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self.register_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module | None]) -> ModuleList:
        """Appends each of ``modules``."""
        if not isinstance(modules, Iterable):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got {type(modules).__name__}")
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module | None) -> None:
        """Puts ``module`` before position ``index`` (as ``list.insert``)."""
        values = list(self._modules.values())
        values.insert(index, module)
        self._modules.clear()
        for m in values:
            self.append(m)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._modules.values())

    def __getitem__(self, idx: int | slice) -> Any:
        values = list(self._modules.values())
        if isinstance(idx, slice):
            return self.__class__(values[idx])
        return values[_abs_index(len(values), idx)]

    def __setitem__(self, idx: int, module: Module | None) -> None:
        self._modules[str(_abs_index(len(self._modules), idx))] = _child(module, str(idx))

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for key in keys[idx] if isinstance(idx, slice) else [keys[_abs_index(len(keys), idx)]]:
            delattr(self, key)
        _renumber(self._modules)

    def pop(self, key: int | slice) -> Any:
        """Removes and returns the module (or ModuleList) at ``key``."""
        v = self[key]
        del self[key]
        return v

    def __iadd__(self, modules: Iterable[Module | None]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module | None]) -> ModuleList:
        return ModuleList([*self, *other])


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
        if key not in self._modules:
            raise KeyError(f"ModuleDict has no key {key!r}; keys: {list(self._modules)}")
        return self._modules[key]  # type: ignore[return-value]

    def __setitem__(self, key: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if key not in self._modules:
            self._check_name(key)
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
