"""``Proxy``: the stand-in for a value while a program is traced (PyTorch's ``torch.fx.Proxy``).

Every operation on a proxy records a node instead of computing: operators become ``call_function`` nodes of the
``operator`` functions, attribute reads ``getattr`` nodes, method calls ``call_method`` nodes. A proxy has no
value, so control flow on it (``if x.sum() > 0``, ``for v in x``, ``bool(x)``) raises ``TraceError``.
"""

from __future__ import annotations

import dis
import inspect
import operator
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .node import Node

if TYPE_CHECKING:
    from ._symbolic_trace import Tracer

__all__ = ["Proxy", "Attribute", "TraceError", "ParameterProxy"]


class TraceError(ValueError):
    """A traced program used a proxy where a concrete value is needed (control flow, iteration)."""


class Proxy:
    """A traced value: operations on it record nodes in ``tracer.graph``."""

    def __init__(self, node: Node, tracer: Tracer | None = None) -> None:
        if tracer is None:
            from ._symbolic_trace import GraphAppendingTracer

            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):  # copy/pickle probes: not a traced attribute
            raise AttributeError(k)
        return Attribute(self, k)

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        if caller is not None:
            for inst in dis.get_instructions(caller.f_code):
                if inst.offset == caller.f_lasti and inst.opname == "UNPACK_SEQUENCE":
                    return (self[i] for i in range(inst.argval))
        return self.tracer.iter(self)

    def __len__(self) -> int:
        raise RuntimeError(
            "'len' is not supported in symbolic tracing by default. If you want this call to be recorded, "
            "please call torch.fx.wrap('len') at module scope"
        )

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __index__(self) -> int:
        raise TraceError("symbolically traced variables cannot be used as an index (they have no value)")

    def __hash__(self) -> int:
        return id(self)

    def keys(self) -> Proxy:
        """``**proxy`` needs keys: the tracer decides (it raises ``TraceError`` by default)."""
        return self.tracer.keys(self)

    def __contains__(self, item: Any) -> bool:
        return self.tracer.to_bool(self.tracer.create_proxy("call_function", operator.contains, (self, item), {}))

    def __getitem__(self, key: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", operator.getitem, (self, key), {})

    def __setitem__(self, key: Any, value: Any) -> None:
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})


class Attribute(Proxy):
    """``proxy.name``: a ``getattr`` node made on first use, or a ``call_method`` node when called."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root, self.attr, self.tracer = root, attr, root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        """The ``getattr`` node, made when the attribute is used as a value."""
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    @node.setter
    def node(self, value: Node) -> None:
        self._node = value

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


class ParameterProxy(Proxy):
    """A proxy of a parameter: its ``shape``, ``dim()``, ``size()`` and ``numel()`` are concrete."""

    def __init__(self, tracer: Tracer, node: Node, name: str, param: Any) -> None:
        super().__init__(node, tracer)
        self.param, self.name = param, name

    @property
    def shape(self) -> Any:
        """The parameter's shape (concrete)."""
        return self.param.shape

    def size(self, dim: int | None = None) -> Any:
        """The parameter's size (concrete)."""
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self) -> int:
        """The parameter's number of dimensions (concrete)."""
        return int(self.param.dim())

    @property
    def ndim(self) -> int:
        """The parameter's number of dimensions (concrete)."""
        return int(self.param.ndim)

    def numel(self) -> int:
        """The parameter's number of elements (concrete)."""
        return int(self.param.numel())

    def nelement(self) -> int:
        """The parameter's number of elements (concrete)."""
        return int(self.param.numel())


def _binary(op: Any, reflected: bool = False) -> Any:
    def impl(self: Proxy, other: Any) -> Proxy:
        args = (other, self) if reflected else (self, other)
        return self.tracer.create_proxy("call_function", op, args, {})

    return impl


_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "matmul": operator.matmul,
    "lshift": operator.lshift, "rshift": operator.rshift, "and": operator.and_, "or": operator.or_,
    "xor": operator.xor,
}  # fmt: skip
_COMPARE = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
            "ge": operator.ge}  # fmt: skip
for _name, _op in _OPS.items():
    setattr(Proxy, f"__{_name}__", _binary(_op))
    setattr(Proxy, f"__r{_name}__", _binary(_op, reflected=True))
for _name, _op in _COMPARE.items():
    setattr(Proxy, f"__{_name}__", _binary(_op))


def _unary(op: Any) -> Any:
    def impl(self: Proxy) -> Proxy:
        return self.tracer.create_proxy("call_function", op, (self,), {})

    return impl


_UNARY: dict[str, Any] = {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert, "abs": abs}
for _uname, _uop in _UNARY.items():
    setattr(Proxy, f"__{_uname}__", _unary(_uop))
