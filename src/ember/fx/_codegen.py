"""The Python source of a ``Graph``'s ``forward`` (what ``GraphModule.code`` shows and runs).

Functions of Ember's public namespaces print by their public path (``ember.relu(x)``,
``ember.nn.functional.gelu(x)``); operators print as Python syntax (``x + y``, ``x[0]``, ``x.shape``); every other
object a node reads (a dtype, a device, another function) becomes a global of the generated code under a readable
unique name, so the code always calls exactly the objects the graph holds.
"""

from __future__ import annotations

import builtins
import keyword
import math
import operator
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .node import Node

if TYPE_CHECKING:
    from .graph import Graph

_BINARY = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/", operator.floordiv: "//",
    operator.mod: "%", operator.pow: "**", operator.matmul: "@", operator.lshift: "<<", operator.rshift: ">>",
    operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.eq: "==", operator.ne: "!=",
    operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
}  # fmt: skip
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}
# Ember's namespaces whose functions print by their public path, in this order of preference
_NAMESPACES = ("ember", "ember.nn.functional", "ember.special", "ember.linalg", "ember.fft")


def public_path(fn: Any) -> str | None:
    """``'ember.relu'`` for a function reachable by that public path, else None."""
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str):
        return None
    for ns in _NAMESPACES:
        mod = sys.modules.get(ns)
        if mod is not None and vars(mod).get(name) is fn:
            return f"{ns}.{name}"
    return None


@dataclass
class PythonCode:
    """The generated source (``src``) and the globals it runs with (``globals``)."""

    src: str
    globals: dict[str, Any] = field(default_factory=dict)


def attr_chain(base: str, qualname: str) -> str:
    """``self.layer1[...]``-style access: ``.name`` for identifiers, ``getattr(x, "0")`` otherwise."""
    out = base
    for part in qualname.split("."):
        out = f"{out}.{part}" if part.isidentifier() and not keyword.iskeyword(part) else f"getattr({out}, {part!r})"
    return out


class _Emitter:
    def __init__(self, taken: set[str]) -> None:
        self.globals: dict[str, Any] = {"ember": sys.modules["ember"], "inf": math.inf, "nan": math.nan}
        self._ids: dict[int, str] = {}
        self._taken = taken  # the nodes' names and the placeholders' targets: locals of the generated code

    def add_global(self, hint: str, obj: Any) -> str:
        if id(obj) in self._ids:
            return self._ids[id(obj)]
        base = re.sub(r"\W", "_", hint) or "_obj"
        if base[0].isdigit() or keyword.iskeyword(base) or base in vars(builtins):
            base = "_" + base
        name, i = base, 0
        while name in self.globals or name in self._taken:
            i += 1
            name = f"{base}_{i}"
        self.globals[name] = obj
        self._ids[id(obj)] = name
        return name

    def fn(self, target: Any) -> str:
        path = public_path(target)
        if path is not None:
            return path
        name = str(getattr(target, "__name__", ""))
        if getattr(builtins, name, None) is target:
            return name
        hint, mod = str(getattr(target, "__name__", "_fn")), str(getattr(target, "__module__", None))
        return self.add_global(f"{mod}_{hint}" if mod in sys.stdlib_module_names else hint, target)  # math_sqrt

    def arg(self, a: Any) -> str:
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple) and hasattr(a, "_fields"):  # a namedtuple: rebuilt by its type
            return f"{self.add_global(type(a).__name__, type(a))}({', '.join(self.arg(x) for x in a)})"
        if isinstance(a, tuple):
            inner = ", ".join(self.arg(x) for x in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self.arg(x) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{self.arg(k)}: {self.arg(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.arg(a.start)}, {self.arg(a.stop)}, {self.arg(a.step)})"
        if a is None or a is Ellipsis or isinstance(a, (bool, int, str, complex)):
            return "..." if a is Ellipsis else repr(a)
        if isinstance(a, float):
            return repr(a) if math.isfinite(a) else ("nan" if math.isnan(a) else ("inf" if a > 0 else "-inf"))
        hint = str(a).rsplit(".", 1)[-1] if type(a).__name__ == "dtype" else type(a).__name__.lower()
        return self.add_global(hint, a)

    def call_args(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        parts = [self.arg(a) for a in args] + [f"{k} = {self.arg(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)


def python_code(graph: Graph, root_module: str = "self") -> PythonCode:
    """The ``forward`` of ``graph`` as Python source, and the globals it needs."""
    em = _Emitter({n.name for n in graph.nodes} | {str(n.target) for n in graph.nodes if n.op == "placeholder"})
    params: list[str] = [root_module]
    body: list[str] = []
    freed = _last_uses(graph)
    starred = defaulted = False
    for n in graph.nodes:
        if n.op == "placeholder":
            default = "" if not n.args else f" = {em.arg(n.args[0])}"
            if n.target.startswith("*"):
                starred = True
            elif default:
                defaulted = True
            elif defaulted and not starred:  # a keyword-only parameter after defaulted ones
                params.append("*")
                starred = True
            params.append(f"{n.target}{default}" if not n.target.startswith("*") else n.target)
            if n.target.lstrip("*") != n.name:
                body.append(f"{n.name} = {n.target.lstrip('*')}")
        elif n.op == "get_attr":
            body.append(f"{n.name} = {attr_chain(root_module, n.target)}")
        elif n.op == "call_module":
            body.append(f"{n.name} = {attr_chain(root_module, n.target)}({em.call_args(n.args, n.kwargs)})")
        elif n.op == "call_method":
            recv, rest = em.arg(n.args[0]), n.args[1:]
            body.append(f"{n.name} = {recv}.{n.target}({em.call_args(rest, n.kwargs)})")
        elif n.op == "call_function":
            body.append(f"{n.name} = {_call_function(em, n)}")
        elif n.op == "output":
            body.append(f"return {em.arg(n.args[0])}")
            continue
        if freed.get(n) and body:  # drop each value after its last use, as PyTorch's code does (peak memory)
            body[-1] += f";  {' = '.join(v.name for v in freed[n])} = None"
    if not body or not body[-1].startswith("return"):
        body.append("pass")
    src = f"\n\ndef forward({', '.join(params)}):\n" + "".join(f"    {line}\n" for line in body)
    return PythonCode(src, em.globals)


def _last_uses(graph: Graph) -> dict[Node, list[Node]]:
    """Node -> the values whose last reader it is (and itself, when nothing reads it)."""
    seen: set[Node] = set()
    out: dict[Node, list[Node]] = {}
    for n in reversed(graph.nodes):
        if n.op == "output":
            seen.update(n.all_input_nodes)
            continue
        dead = [i for i in n.all_input_nodes if i not in seen]
        seen.update(dead)
        if not n.users and n.op != "placeholder":
            dead.append(n)
            seen.add(n)
        out[n] = dead
    return out


def _call_function(em: _Emitter, n: Node) -> str:
    t, args = n.target, n.args
    if not n.kwargs:
        if t in _BINARY and len(args) == 2:
            return f"{em.arg(args[0])} {_BINARY[t]} {em.arg(args[1])}"
        if t in _UNARY and len(args) == 1:
            return f"{_UNARY[t]}{em.arg(args[0])}"
        if t is operator.getitem and len(args) == 2:
            return f"{em.arg(args[0])}[{em.arg(args[1])}]"
        if t is builtins.getattr and len(args) == 2 and isinstance(args[1], str) and args[1].isidentifier():
            return f"{em.arg(args[0])}.{args[1]}"
    return f"{em.fn(t)}({em.call_args(args, n.kwargs)})"
