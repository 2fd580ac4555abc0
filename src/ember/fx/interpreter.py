"""``Interpreter`` and ``Transformer``: run a ``GraphModule`` node by node (PyTorch's ``torch.fx.Interpreter``).

Subclass and override ``run_node`` or one of the per-op methods (``call_function``, ``call_module`` ...) to
observe or change what each node does; ``Transformer`` runs the same methods on proxies to build a new graph.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .._tensor import Tensor
from ..nn import Module
from ._patcher import Patcher
from ._symbolic_trace import Tracer
from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, Node, Target, map_aggregate, map_arg
from .proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs ``module``'s graph node by node; ``run(*args)`` returns the output."""

    def __init__(self, module: Module, garbage_collect_values: bool = True, graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph: Graph = graph if graph is not None else module.graph  # type: ignore[assignment]
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        self.user_to_last_uses: dict[Node, list[Node]] = {}
        if garbage_collect_values:
            seen: set[Node] = set()
            for n in reversed(self.graph.nodes):
                for inp in n.all_input_nodes:
                    if inp not in seen:
                        seen.add(inp)
                        self.user_to_last_uses.setdefault(n, []).append(inp)

    def run(self, *args: Any, initial_env: dict[Node, Any] | None = None, enable_io_processing: bool = True) -> Any:
        """Run the graph on ``args``; returns what the output node returns."""
        self.env = dict(initial_env or {})
        self.args_iter: Iterator[Any] = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            self.env[node] = self.run_node(node)
            if self.garbage_collect_values:
                for gone in self.user_to_last_uses.get(node, []):
                    self.env.pop(gone, None)
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n: Node) -> Any:
        """Run one node: its arguments fetched from ``env``, then the method named by ``n.op``."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # -- one method per op -------------------------------------------------------------------------
    def placeholder(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """The next positional input (a ``*args`` placeholder takes the rest); the default when none is left."""
        if target.startswith("**"):
            return {}
        if target.startswith("*"):
            return tuple(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as e:
            if args:
                return args[0]
            raise RuntimeError(
                f"Expected positional argument for parameter {target}, but one was not passed in!"
            ) from e

    def get_attr(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """The module's attribute ``target``."""
        return self.fetch_attr(target)

    def call_function(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """``target(*args, **kwargs)``."""
        return target(*args, **kwargs)

    def call_method(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """``args[0].<target>(*args[1:], **kwargs)``."""
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """Call the sub-module ``target``."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """The graph's result."""
        return args[0]

    # -- helpers -----------------------------------------------------------------------------------
    def fetch_attr(self, target: str) -> Any:
        """``module.<target>`` for a dotted ``target``."""
        obj: Any = self.module
        for i, atom in enumerate(target.split(".")):
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(target.split('.')[: i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``n``'s arguments with each node replaced by its value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Argument, n: Node) -> Any:
        """``args`` with each node replaced by its value in ``env``."""

        def load(a: Node) -> Any:
            if a not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {a}! Run Graph.lint() to diagnose")
            return self.env[a]

        return map_arg(args, load)

    def boxed_run(self, args_list: list[Any]) -> Any:
        """``run(*args_list)``, clearing ``args_list``."""
        args = list(args_list)
        args_list.clear()
        return self.run(*args)


class _TransformerTracer(Tracer):
    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph

    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        return True


class Transformer(Interpreter):
    """Builds a new graph by running each node's method on proxies; ``transform()`` returns the GraphModule."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module, garbage_collect_values=False)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Proxy:
        """A placeholder of the new graph (its default kept)."""
        default = tuple(args[:1])
        return Proxy(self.tracer.create_node("placeholder", target, default, {}), self.tracer)

    def get_attr(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Proxy:
        """A ``get_attr`` node of the new graph."""
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """A ``call_module`` node of the new graph."""
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def call_function(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """A ``call_function`` node of the new graph."""
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """A ``call_method`` node of the new graph."""
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def transform(self) -> GraphModule:
        """Run the transformation; returns a ``GraphModule`` of the new graph over the same sub-modules."""
        with Patcher() as patcher:  # an override may call ember.* functions on the proxies: record them
            patcher.patch_namespaces()
            patcher.patch_tensor_operators(Tensor)
            result = self.run(*(self._placeholder_proxies()), enable_io_processing=False)
        if result is not None:
            self.new_graph.output(map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a))
        return GraphModule(self.module, self.new_graph)

    def _placeholder_proxies(self) -> list[Any]:
        return [_PlaceholderArg(n) for n in self.graph.nodes if n.op == "placeholder"]

    def run_node(self, n: Node) -> Any:
        """As ``Interpreter.run_node``; a placeholder is made in the new graph whatever the input."""
        if n.op == "placeholder":
            return self.placeholder(n.target, n.args, n.kwargs)
        return super().run_node(n)


class _PlaceholderArg:
    """A stand-in input: ``Transformer`` makes its own placeholders."""

    def __init__(self, node: Node) -> None:
        self.node = node
