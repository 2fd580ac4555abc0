"""``Graph``: the ordered nodes of a traced program (PyTorch's ``torch.fx.Graph``)."""

from __future__ import annotations

import builtins
import importlib
import inspect
import keyword
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ._codegen import PythonCode, public_path, python_code
from .node import Argument, Node, Target, _target_name, map_arg

if TYPE_CHECKING:
    from ..nn import Module

__all__ = ["Graph", "PythonCode"]

_NO_DEFAULT: Any = inspect.Signature.empty


class _NodeList:
    """The nodes of a graph in order: iterable (forwards and ``reversed``), ``len``."""

    def __init__(self, graph: Graph, reverse: bool = False) -> None:
        self._graph, self._reverse = graph, reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        n = root._prev if self._reverse else root._next
        while n is not root:
            nxt = n._prev if self._reverse else n._next
            if not n._erased:
                yield n
            n = nxt

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._graph, not self._reverse))


class _InsertPoint:
    """Where new nodes go; restores the previous place on ``__exit__`` (``with graph.inserting_after(n):``)."""

    def __init__(self, graph: Graph, where: Callable[[Node], None]) -> None:
        self.graph, self.orig = graph, graph._insert
        graph._insert = where

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        self.graph._insert = self.orig


def _snake(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    name = re.sub(r"\W", "_", name)
    return name or "_node"


class Graph:
    """The nodes of a program, in execution order, and the operations that build and edit them."""

    def __init__(self, owning_module: Module | None = None, tracer_cls: type | None = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._used_names: dict[str, int] = {}
        self._insert: Callable[[Node], None] = self._root.prepend
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls

    @property
    def nodes(self) -> _NodeList:
        """The nodes in order (iterate it; ``len(graph.nodes)``; ``reversed(graph.nodes)``)."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Target = None, sort: bool = True) -> list[Node]:
        """The nodes of ``op`` (and ``target``, when given), in graph order."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    def output_node(self) -> Node:
        """The graph's output node (the last node)."""
        last = self._root._prev
        if last is self._root or last.op != "output":
            raise RuntimeError("the graph has no output node")
        return last

    # -- names -------------------------------------------------------------------------------------
    def _unique_name(self, candidate: str) -> str:
        base = _snake(candidate)
        if base[0].isdigit():
            base = "_" + base
        m = re.fullmatch(r"(.*)_(\d+)", base)
        n: int | None = None
        if m:
            base, n = m.group(1), int(m.group(2))
        while True:
            name = base if n is None else f"{base}_{n}"
            taken = name in self._used_names or keyword.iskeyword(name) or hasattr(builtins, name)
            if not taken and name not in ("self", "ember", "torch", "inf", "nan"):
                self._used_names[name] = 1
                return name
            n = 1 if n is None else n + 1

    @staticmethod
    def _target_to_str(target: Target) -> str:
        if isinstance(target, str):
            return target.lstrip("*").replace(".", "_")
        return str(getattr(target, "__name__", None) or "fn")

    # -- building ----------------------------------------------------------------------------------
    def create_node(
        self,
        op: str,
        target: Target,
        args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None,
        name: str | None = None,
        type_expr: Any = None,
    ) -> Node:
        """Make a node and insert it at the current insertion point (the end, by default)."""
        args, kwargs = tuple(args or ()), dict(kwargs or {})
        for a in (args, kwargs):
            map_arg(a, self._check_own)
        name = self._unique_name(name if name is not None else self._target_to_str(target))
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._insert(n)
        self._len += 1
        return n

    def _check_own(self, n: Node) -> None:
        if n.graph is not self:
            raise RuntimeError(f"node {n.name!r} of another graph used as an argument; copy it with node_copy")
        if n._erased:
            raise RuntimeError(f"node {n.name!r} was erased from the graph")

    def placeholder(self, name: str, type_expr: Any = None, default_value: Any = _NO_DEFAULT) -> Node:
        """An input of the graph (``default_value``: the argument's default in the generated ``forward``)."""
        args = () if default_value is _NO_DEFAULT else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """Read ``owning_module.<qualified_name>`` (a parameter, buffer, constant or sub-module)."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_function(
        self, the_function: Callable[..., Any], args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None, type_expr: Any = None,
    ) -> Node:  # fmt: skip
        """Call ``the_function(*args, **kwargs)``."""
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def call_method(
        self, method_name: str, args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None, type_expr: Any = None,
    ) -> Node:  # fmt: skip
        """Call ``args[0].<method_name>(*args[1:], **kwargs)``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_module(
        self, module_name: str, args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None, type_expr: Any = None,
    ) -> Node:  # fmt: skip
        """Call the sub-module ``owning_module.<module_name>``."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any = None) -> Node:
        """What the graph returns."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """New nodes go before ``n`` (the start of the graph when None); a context manager."""
        if n is None:
            return self.inserting_after(self._root)
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """New nodes go after ``n`` (the end of the graph when None); a context manager."""
        if n is None:
            return _InsertPoint(self, self._root.prepend)
        return _InsertPoint(self, _After(n))

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x) -> Node:
        """A copy of ``node`` (of any graph) in this graph, its node arguments mapped by ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        new = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        new.meta = dict(node.meta)
        return new

    def graph_copy(self, g: Graph, val_map: dict[Node, Node], return_output_node: bool = False) -> Any:
        """Copy the nodes of ``g`` (its output excepted) into this graph; returns the copied output value."""
        for n in g.nodes:
            if n in val_map:
                continue
            if n.op == "output":
                rv = map_arg(n.args[0], lambda x: val_map[x])
                return (rv, n) if return_output_node else rv
            val_map[n] = self.node_copy(n, lambda x: val_map[x])
        return None

    def __deepcopy__(self, memo: dict[int, Any]) -> Graph:
        g = Graph(tracer_cls=self._tracer_cls)
        out = g.graph_copy(self, {}, return_output_node=True)
        memo[id(self)] = g
        if out is not None:
            rv, node = out
            g.output(rv, type_expr=node.type)
        return g

    # -- editing -----------------------------------------------------------------------------------
    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that no other node reads."""
        if to_erase.users:
            raise RuntimeError(
                f"Tried to erase Node {to_erase.name} but it still had {len(to_erase.users)} users in the graph: "
                f"{to_erase.users}!"
            )
        if to_erase.graph is not self or to_erase._erased:
            raise RuntimeError(f"erase_node: {to_erase.name} is not a node of this graph")
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def eliminate_dead_code(self) -> bool:
        """Erase the nodes whose results nobody reads (impure ones kept); returns whether any was erased."""
        changed = False
        for n in reversed(self.nodes):
            if not n.users and not n.is_impure():
                self.erase_node(n)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph: nodes read only earlier nodes of this graph, names are unique, one output last,
        and (with an owning module) every ``get_attr``/``call_module`` target exists."""
        seen: set[Node] = set()
        names: set[str] = set()
        for n in self.nodes:
            if n.graph is not self:
                raise RuntimeError(f"Node {n.name} does not belong to this Graph")
            for inp in n.all_input_nodes:
                if inp.graph is not self:
                    raise RuntimeError(f"Argument '{inp}' of Node '{n}' does not belong to this Graph")
                if inp not in seen:
                    raise RuntimeError(f"Argument '{inp}' of Node '{n}' was used before it has been defined!")
            if n.name in names:
                raise RuntimeError(f"Node redefined name {n.name}!")
            if n.op == "output" and n.next is not self._root:
                raise RuntimeError(f"the output node {n.name} is not the last node of the graph")
            seen.add(n)
            names.add(n.name)
            if self.owning_module is not None and n.op in ("get_attr", "call_module"):
                self._lint_target(n)

    def _lint_target(self, n: Node) -> None:
        obj: Any = self.owning_module
        for i, part in enumerate(n.target.split(".")):
            if not hasattr(obj, part):
                done = ".".join(n.target.split(".")[:i])
                raise RuntimeError(f"Node {n.name} target {n.target} references nonexistent attribute {part} of {done}")
            obj = getattr(obj, part)

    # -- printing ----------------------------------------------------------------------------------
    def python_code(self, root_module: str = "self") -> PythonCode:
        """The generated ``forward`` source and its globals."""
        return python_code(self, root_module)

    def print_tabular(self) -> None:
        """Print one row per node: opcode, name, target, args, kwargs."""
        rows = [["opcode", "name", "target", "args", "kwargs"]]
        for n in self.nodes:
            rows.append([n.op, n.name, _target_name(n.target), str(n.args), str(n.kwargs)])
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        print("\n".join(lines))

    def __str__(self) -> str:
        params = ", ".join(n.name for n in self.nodes if n.op == "placeholder")
        return f"graph({params}):\n" + "\n".join(f"    {n.format_node()}" for n in self.nodes)

    # -- pickling: the nodes as a list (a linked list would recurse once per node) -----------------
    def __getstate__(self) -> dict[str, Any]:
        index = {n: i for i, n in enumerate(self.nodes)}

        def ref(n: Node) -> _Ref:
            return _Ref(index[n])

        def target(t: Target) -> Target:
            path = public_path(t) if callable(t) else None
            return _Path(path) if path is not None else t

        nodes = [(n.name, n.op, target(n.target), map_arg(n.args, ref), map_arg(n.kwargs, ref), n.type)
                 for n in self.nodes]  # fmt: skip
        return {"nodes": nodes, "tracer_cls": self._tracer_cls}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(tracer_cls=state["tracer_cls"])  # type: ignore[misc]
        made: list[Node] = []

        def back(a: Any) -> Any:
            return made[a.i] if isinstance(a, _Ref) else a

        from .node import map_aggregate

        for name, op, target, args, kwargs, typ in state["nodes"]:
            target = target.resolve() if isinstance(target, _Path) else target
            made.append(self.create_node(op, target, map_aggregate(args, back), map_aggregate(kwargs, back), name, typ))


class _Ref:
    """A node's position, standing for the node in a pickled graph."""

    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    def __getstate__(self) -> int:
        return self.i

    def __setstate__(self, i: int) -> None:
        self.i = i


class _Path:
    """A function of Ember's public namespaces, pickled by its public path (``ember.cat``)."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    def __getstate__(self) -> str:
        return self.path

    def __setstate__(self, path: str) -> None:
        self.path = path

    def resolve(self) -> Any:
        mod, _, name = self.path.rpartition(".")
        return getattr(importlib.import_module(mod), name)


class _After:
    """Insert each new node after the previous one (so a run of inserts keeps its order)."""

    def __init__(self, n: Node) -> None:
        self.n = n

    def __call__(self, x: Node) -> None:
        self.n.append(x)
        self.n = x
