"""``Node``: one operation of an fx ``Graph`` (PyTorch's ``torch.fx.Node``).

A node is ``placeholder`` (an input), ``get_attr`` (a parameter, buffer or constant of the owning module),
``call_function`` / ``call_method`` / ``call_module`` (a computation) or ``output`` (what the graph returns).
Its ``args``/``kwargs`` may hold other nodes, nested in tuples, lists, dicts and slices; ``users`` maps each node
that reads this one to ``None`` and is kept in step when arguments change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["Node", "map_arg", "map_aggregate", "Argument", "Target"]

Argument = Any
Target = Any
OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output", "root")

# call_function targets with side effects: dead-code elimination keeps them (PyTorch's set, in Ember's terms:
# the asserts of specialized concrete_args, and the random functions, which advance the generator)
_SIDE_EFFECTFUL_NAMES = {"_assert", "_assert_is_none", "setitem", "print"}
_RANDOM_NAMES = {
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "poisson",
    "bernoulli", "multinomial",
}  # fmt: skip


def map_aggregate(a: Argument, fn: Callable[[Any], Any]) -> Argument:
    """Apply ``fn`` to every leaf of ``a`` (through tuples, lists, dicts and slices), keeping the structure."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(x, fn) for x in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)  # a namedtuple keeps its type
    if isinstance(a, list):
        return [map_aggregate(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply ``fn`` to every ``Node`` in ``a`` (other leaves are kept)."""
    if not callable(fn):
        raise TypeError("map_arg: fn must be callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _collect(a: Argument) -> dict[Node, None]:
    seen: dict[Node, None] = {}
    map_arg(a, lambda n: seen.setdefault(n))
    return seen


class Node:
    """One operation of a ``Graph``: ``op``, ``target``, ``args``, ``kwargs``, ``users``, ``meta``."""

    def __init__(
        self,
        graph: Graph,
        name: str,
        op: str,
        target: Target,
        args: tuple[Argument, ...],
        kwargs: dict[str, Argument],
        return_type: Any = None,
    ) -> None:
        if op not in OPS:
            raise ValueError(f"Node: op must be one of {OPS}, got {op!r}")
        if op in ("call_method", "call_module", "get_attr", "placeholder") and not isinstance(target, str):
            raise ValueError(f"Node: the target of a {op} node must be a string, got {type(target).__name__}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node: the target of a call_function node must be callable, got {target!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = return_type
        self.users: dict[Node, None] = {}
        self.meta: dict[str, Any] = {}
        self._input_nodes: dict[Node, None] = {}
        self._args: tuple[Argument, ...] = ()
        self._kwargs: dict[str, Argument] = {}
        self._prev: Node = self
        self._next: Node = self
        self._erased = False
        self._update_args_kwargs(tuple(args), dict(kwargs))

    # -- arguments ---------------------------------------------------------------------------------
    def _update_args_kwargs(self, args: tuple[Argument, ...], kwargs: dict[str, Argument]) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        self._input_nodes = {**_collect(args), **_collect(kwargs)}
        for new in self._input_nodes:
            new.users.setdefault(self)

    @property
    def args(self) -> tuple[Argument, ...]:
        """The positional arguments; assigning them updates ``users`` of the nodes read."""
        return self._args

    @args.setter
    def args(self, value: tuple[Argument, ...]) -> None:
        self._update_args_kwargs(tuple(value), self._kwargs)

    @property
    def kwargs(self) -> dict[str, Argument]:
        """The keyword arguments; assigning them updates ``users`` of the nodes read."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: dict[str, Argument]) -> None:
        self._update_args_kwargs(self._args, dict(value))

    @property
    def all_input_nodes(self) -> list[Node]:
        """The nodes this node reads, in order of first appearance."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Set ``args[idx]`` to ``arg``."""
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Set ``kwargs[key]`` to ``arg``."""
        self.kwargs = {**self._kwargs, key: arg}

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Read ``new_input`` wherever this node read ``old_input``."""

        def swap(n: Node) -> Node:
            return new_input if n is old_input else n

        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(
        self,
        replace_with: Node,
        delete_user_cb: Callable[[Node], bool] = lambda user: True,
        *,
        propagate_meta: bool = False,
    ) -> list[Node]:
        """Make every user of this node read ``replace_with`` instead; returns the users changed."""
        if propagate_meta:
            if replace_with.meta:
                raise RuntimeError("replace_all_uses_with(propagate_meta=True): the new node already has meta")
            replace_with.meta.update(self.meta)
        changed = [u for u in list(self.users) if delete_user_cb(u)]
        for user in changed:
            user.replace_input_with(self, replace_with)
        return changed

    @property
    def stack_trace(self) -> str | None:
        """Where the node was recorded, when the tracer kept it (``meta["stack_trace"]``), else None."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    # -- position in the graph ---------------------------------------------------------------------
    @property
    def next(self) -> Node:
        """The node after this one (the graph's root sentinel after the last)."""
        return self._next

    @property
    def prev(self) -> Node:
        """The node before this one (the graph's root sentinel before the first)."""
        return self._prev

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    def prepend(self, x: Node) -> None:
        """Move ``x`` to just before this node."""
        if x is self:
            return
        if x.graph is not self.graph:
            raise RuntimeError("prepend: the node belongs to another graph")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Move ``x`` to just after this node."""
        self._next.prepend(x)

    # -- queries -----------------------------------------------------------------------------------
    def is_impure(self) -> bool:
        """Whether the node has effects beyond its result (dead-code elimination keeps it)."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            name = str(getattr(self.target, "__name__", ""))
            mod = str(getattr(self.target, "__module__", "") or "")
            if name in _SIDE_EFFECTFUL_NAMES and (mod.startswith(("ember", "_operator", "builtins")) or not mod):
                return True
            if name in _RANDOM_NAMES and mod.startswith("ember"):
                return True
            return _in_place(name) or self.kwargs.get("inplace") is True
        if self.op == "call_method":  # an in-place method (``x.add_(y)``, ``x.copy_(y)``) changes its receiver
            return _in_place(str(self.target))  # (PyTorch 2.13 drops them, losing the write)
        return False

    def format_node(self) -> str:
        """The node in the graph's text form: ``%name : [num_users=N] = op[target=...](args = ..., ...)``."""
        if self.op == "placeholder":
            return f"%{self.name} : [num_users={len(self.users)}] = placeholder[target={self.target}]"
        if self.op == "output":
            return f"return {_fmt(self.args[0])}"
        return (
            f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={_target_name(self.target)}]"
            f"(args = {_fmt(self.args)}, kwargs = {_fmt(self.kwargs)})"
        )

    def __repr__(self) -> str:
        return self.name


def _in_place(name: str) -> bool:
    """``add_``, ``relu_``: a function or method that writes into its first argument."""
    return name.endswith("_") and not name.endswith("__") and not name.startswith("_")


def _target_name(target: Target) -> str:
    if isinstance(target, str):
        return target
    from ._codegen import public_path

    path = public_path(target)
    if path is not None:
        return path
    mod = getattr(target, "__module__", None) or ""
    mod = "operator" if mod == "_operator" else mod
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", repr(target))
    return f"{mod}.{name}" if mod and mod != "builtins" else str(name)


def _fmt(a: Argument) -> str:
    return str(map_arg(a, lambda n: _Shown(f"%{n.name}")))


class _Shown(str):
    def __repr__(self) -> str:
        return str(self)
