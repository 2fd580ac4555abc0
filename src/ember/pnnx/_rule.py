"""The rule that maps a PNNX operator type to Ember: ``nn.X`` -> ``ember.nn.X(**params)``, ``F.x`` ->
``ember.nn.functional.x``, ``torch.x`` -> ``ember.x``, ``Tensor.x`` -> the method ``x``.

pnnx writes PyTorch's own argument names (the module's constructor keywords; a function's keywords with
the tensor inputs bound as ``$input``, ``$other``, ...), and Ember keeps PyTorch's names, so one rule
covers every operator whose Ember counterpart exists. The call adapters below translate only what pnnx
writes in its own way: ``$input`` (the first argument), a keyword naming a ``*args`` parameter
(``Tensor.repeat sizes=(1,2)`` -> ``repeat(1, 2)``), dtypes as text (``dtype=torch.float``), and
keywords that change nothing at inference (``inplace``, ``memory_format``, ...) when Ember's function
does not take them. Where pnnx's parameters mean something else, an exception table (``_nn.py``,
``_functional.py``) says so, once.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["RuleTable", "function_call", "method_call", "module_builder", "pnnx_value"]

#: keywords pnnx writes that do not change a result at inference; dropped when Ember's callable lacks them
IGNORABLE = frozenset({"inplace", "memory_format", "non_blocking", "copy", "layout", "pin_memory", "_stacklevel",
                       "device", "requires_grad"})  # fmt: skip

_NO = object()


def pnnx_value(v: Any) -> Any:
    """A parameter value as Ember takes it: ``"torch.float"`` -> ``ember.float32``; lists of them too."""
    if isinstance(v, str) and v.startswith("torch."):
        import ember

        from .._dtype import DType

        found = getattr(ember, v[len("torch.") :], None)
        return found if isinstance(found, DType) else v
    return v


def _signature(fn: Any) -> tuple[frozenset[str] | None, str | None]:
    """(the keyword names ``fn`` takes, or None when it takes ``**kwargs``; the name of its ``*args``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None, None
    names, star = set(), None
    for p in params:
        if p.kind is p.VAR_KEYWORD:
            return None, star
        if p.kind is p.VAR_POSITIONAL:
            star = p.name
        else:
            names.add(p.name)
    return frozenset(names), star


Signature = tuple[frozenset[str] | None, str | None]


def _adapt(sig: Signature, args: tuple[Any, ...], kw: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    names, star = sig
    out: dict[str, Any] = {}
    for k, v in kw.items():
        if k == star:  # ``sizes=(1, 2)`` for ``repeat(*sizes)``
            args = (*args, *(v if isinstance(v, (list, tuple)) else (v,)))
        elif names is not None and k not in names and k in IGNORABLE:
            continue
        else:
            out[k] = pnnx_value(v)
    return args, out


def function_call(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` called the way pnnx writes it (keywords translated; ``$input=`` as the first argument when ``fn``
    has no parameter of that name)."""
    sig = _signature(fn)
    takes_input = sig[0] is None or "input" in sig[0]

    def call(*args: Any, input: Any = _NO, **kw: Any) -> Any:
        args, kw = _adapt(sig, args, kw)
        if input is not _NO:
            if takes_input and not args:
                kw["input"] = input
            else:
                args = (input, *args)
        return fn(*args, **kw)

    call.__name__ = getattr(fn, "__name__", "call")
    call.__wrapped__ = fn  # type: ignore[attr-defined]
    return call


def method_call(name: str, unbound: Any) -> Callable[..., Any]:
    """``Tensor.name`` called on the ``$input`` operand."""
    sig = _signature(unbound)

    def call(*args: Any, input: Any = _NO, **kw: Any) -> Any:
        if input is not _NO:
            args = (input, *args)
        args, kw = _adapt(sig, args, kw)
        return getattr(args[0], name)(*args[1:], **kw)

    call.__name__ = name
    return call


def module_builder(cls: type) -> Callable[..., Any]:
    """``cls(**params)`` from a ``nn.X`` line's parameters, translated as for functions."""
    sig = _signature(cls)

    def build(**params: Any) -> Any:
        _, kw = _adapt(sig, (), params)
        return cls(**kw)

    build.__name__ = cls.__name__
    build.__wrapped__ = cls  # type: ignore[attr-defined]
    return build


class RuleTable(Mapping[str, Callable[..., Any]]):
    """Operator type -> converter: the exceptions first, then ``resolve(type)`` (None: not supported).

    Iterating lists every type the rule resolves (``enumerate()``), so ``SUPPORTED_TYPES`` stays a list.
    """

    def __init__(self, exceptions: Mapping[str, Callable[..., Any]], resolve: Callable[[str], Any],
                 enumerate: Callable[[], Iterator[str]]) -> None:  # fmt: skip
        self.exceptions = dict(exceptions)
        self._resolve, self._enumerate = resolve, enumerate
        self._cache: dict[str, Any] = {}

    def __getitem__(self, op_type: str) -> Callable[..., Any]:
        hit = self.exceptions.get(op_type)
        if hit is not None:
            return hit
        if op_type not in self._cache:
            self._cache[op_type] = self._resolve(op_type)
        found = self._cache[op_type]
        if found is None:
            raise KeyError(op_type)
        return found  # type: ignore[no-any-return]

    def __contains__(self, op_type: object) -> bool:
        if not isinstance(op_type, str):
            return False
        try:
            self[op_type]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(sorted({*self.exceptions, *(t for t in self._enumerate() if t in self)}))

    def __len__(self) -> int:
        return sum(1 for _ in self)
