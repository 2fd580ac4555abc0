"""``Tracer`` and ``symbolic_trace``: run a module's ``forward`` on proxies and record a ``Graph``."""

from __future__ import annotations

import inspect
import math
import types
from collections.abc import Callable, Iterator
from typing import Any

from .._param import Param
from .._tensor import Tensor
from .._torch_names import _assert
from ..nn import Module, Sequential
from ._patcher import Patcher, namespace_functions, wrap
from .graph import Graph
from .node import Argument, Node, Target
from .proxy import ParameterProxy, Proxy, TraceError

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "GraphAppendingTracer"]


class _PH:
    """``concrete_args`` value meaning: keep this argument a placeholder."""

    def __repr__(self) -> str:
        return "PH"


PH = _PH()


class Tracer:
    """Turns a module or function into a ``Graph`` by running it on proxies.

    Override ``is_leaf_module`` to choose which sub-modules stay single ``call_module`` nodes (by default the
    modules of ``ember.nn``, ``Sequential`` excepted). ``autowrap_modules``: modules whose functions are recorded
    when called by name from the traced code (``math``); ``autowrap_functions``: single such functions.
    """

    def __init__(
        self,
        autowrap_modules: tuple[Any, ...] = (math,),
        autowrap_functions: tuple[Callable[..., Any], ...] = (),
        param_shapes_constant: bool = False,
    ) -> None:
        self._autowrap_ids: dict[int, Any] = {}
        for m in autowrap_modules:
            for name, value in vars(m).items():
                if not name.startswith("_") and callable(value):
                    self._autowrap_ids[id(value)] = value
        for fn in autowrap_functions:
            self._autowrap_ids[id(fn)] = fn
        self.autowrap_modules, self.autowrap_functions = autowrap_modules, autowrap_functions
        self.param_shapes_constant = param_shapes_constant
        self.proxy_buffer_attributes = False
        self.graph = Graph(tracer_cls=type(self))
        self.root: Module = Module()
        self.submodule_paths: dict[Module, str] | None = None
        self.tensor_attrs: dict[int, str] = {}
        self.scope = None

    # -- the hooks a subclass overrides -------------------------------------------------------------
    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """Whether ``m`` is recorded as one ``call_module`` node (True) or traced through (False)."""
        mod = type(m).__module__
        return (mod == "ember.nn" or mod.startswith("ember.nn.")) and not isinstance(m, Sequential)

    def path_of_module(self, mod: Module) -> str:
        """The qualified name of ``mod`` in the root module."""
        if self.submodule_paths is not None and mod in self.submodule_paths:
            return self.submodule_paths[mod]
        for name, m in self.root.named_modules():
            if m is mod:
                return name
        raise NameError("module is not installed as a submodule")

    def call_module(self, m: Module, forward: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A leaf module call becomes a ``call_module`` node; any other module is traced through."""
        qualname = self.path_of_module(m)
        if not self.is_leaf_module(m, qualname):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", qualname, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        """A parameter read from a traced module becomes a ``get_attr`` proxy (a buffer too when
        ``proxy_buffer_attributes``; otherwise it becomes a ``get_attr`` node where it is used, as in PyTorch)."""
        if isinstance(attr_val, Param):
            name = self._state_name(attr_val)
            if name is not None and (not attr_val.is_buffer or self.proxy_buffer_attributes):
                return self._param_proxy(name, attr_val, parameter_proxy_cache)
        return attr_val

    def _state_name(self, p: Param) -> str | None:
        """The qualified name of a parameter or buffer of the root (looked up in a table made once per trace)."""
        table = self.__dict__.get("_state_names")
        if table is None or table[0] is not self.root:
            names: dict[int, str] = {}
            for n, q in self.root.named_parameters(remove_duplicate=False):
                names.setdefault(id(q), n)
            for n, q in self.root.named_buffers(remove_duplicate=False):
                names.setdefault(id(q), n)
            table = (self.root, names)
            self.__dict__["_state_names"] = table
        return table[1].get(id(p))

    def _param_proxy(self, name: str, p: Param, cache: dict[str, Any]) -> Proxy:
        if name not in cache:
            node = self.create_node("get_attr", name, (), {})
            cache[name] = ParameterProxy(self, node, name, p) if self.param_shapes_constant else Proxy(node, self)
        return cache[name]  # type: ignore[no-any-return]

    def create_node(
        self, kind: str, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Argument],
        name: str | None = None, type_expr: Any = None,
    ) -> Node:  # fmt: skip
        """Insert a node in the graph being built."""
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        """The proxy of a new node."""
        return Proxy(node, self)

    def create_proxy(
        self, kind: str, target: Target, args: tuple[Any, ...], kwargs: dict[str, Any],
        name: str | None = None, type_expr: Any = None, proxy_factory_fn: Callable[[Node], Proxy] | None = None,
    ) -> Proxy:  # fmt: skip
        """Record ``kind``/``target`` with ``args``/``kwargs`` (values turned into node arguments) as a proxy."""
        args_ = self.create_arg(tuple(args))
        kwargs_ = self.create_arg(dict(kwargs))
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return proxy_factory_fn(node) if proxy_factory_fn is not None else self.proxy(node)

    def create_arg(self, a: Any) -> Argument:
        """A value as a node argument: proxies become their nodes, parameters and tensors ``get_attr`` nodes."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple) and hasattr(a, "_fields"):  # a namedtuple: its construction is a node (PyTorch)
            return self.create_node("call_function", type(a), tuple(self.create_arg(x) for x in a), {})
        if isinstance(a, tuple):
            return tuple(self.create_arg(x) for x in a)
        if isinstance(a, list):
            return [self.create_arg(x) for x in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if not isinstance(k, str) and isinstance(self.create_arg(k), Node):
                    raise RuntimeError(f"Keys for dictionaries used as an argument cannot contain a Node. Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, Param):
            name = self._state_name(a)
            if name is None:
                raise NameError("parameter is not a member of this module")
            return self.create_node("get_attr", name, (), {})
        if isinstance(a, Tensor):
            name = self.tensor_attrs.get(id(a))
            if name is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                name = f"_tensor_constant{i}"
                object.__setattr__(self.root, name, a)
                self.tensor_attrs[id(a)] = name
            return self.create_node("get_attr", name, (), {})
        if isinstance(a, Module):
            raise RuntimeError(f"Unsupported node type: a module ({type(a).__name__}) used as an argument")
        return a

    def to_bool(self, obj: Proxy) -> bool:
        """``bool(proxy)``: control flow on a traced value cannot be recorded."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy) -> Iterator[Any]:
        """``iter(proxy)``: cannot be recorded (the length is unknown)."""
        raise TraceError(
            "Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop or as a *args "
            "or **kwargs function argument. See the torch.fx docs on pytorch.org for a more detailed explanation of "
            "what types of control flow can be traced, and check out the Proxy docstring for help troubleshooting "
            "Proxy iteration errors"
        )

    def keys(self, obj: Proxy) -> Any:
        """``proxy.keys()`` (for ``**proxy``): recorded as a ``keys`` method call."""
        return Attribute_call(obj, "keys")

    # -- tracing -----------------------------------------------------------------------------------
    def trace(self, root: Module | Callable[..., Any], concrete_args: dict[str, Any] | None = None) -> Graph:
        """Trace ``root`` (a module's ``forward`` or a function) into a new ``Graph``."""
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            if fn is Module.__dict__.get("forward"):
                raise RuntimeError(f"{type(root).__name__} defines no forward() to trace")
        elif callable(root):
            self.root, fn = Module(), root
        else:
            raise TypeError(f"symbolic_trace: expected a Module or a function, got {type(root).__name__}")
        self.graph = Graph(tracer_cls=type(self))
        self.tensor_attrs = {}
        self.__dict__.pop("_state_names", None)  # parameters may have changed since the last trace
        self.submodule_paths = {}
        for name, m in self.root.named_modules():
            self.submodule_paths.setdefault(m, name)
        fn_globals = getattr(fn, "__globals__", {})
        call = self._placeholders(fn, isinstance(root, Module), concrete_args)
        param_cache: dict[str, Any] = {}
        ember_fns = namespace_functions()
        ids = {**self._autowrap_ids, **ember_fns}
        orig_call, orig_getattr = Module.__call__, Module.__getattr__
        tracer = self

        def module_getattr_wrapper(mod: Module, attr: str) -> Any:
            return tracer.getattr(attr, orig_getattr(mod, attr), param_cache)

        def module_call_wrapper(mod: Module, *args: Any, **kwargs: Any) -> Any:
            def forward(*a: Any, **k: Any) -> Any:
                return orig_call(mod, *a, **k)

            fwd = getattr(type(mod), "forward", None)
            patcher.patch_globals(getattr(fwd, "__globals__", {}), ids)
            return tracer.call_module(mod, forward, args, kwargs)

        with Patcher() as patcher:
            patcher.patch_namespaces()
            patcher.patch_wrapped()
            patcher.patch_globals(fn_globals, ids)
            for mod in self.autowrap_modules:  # ``math.sqrt(n)``: the module's own names
                patcher.patch_globals(vars(mod), self._autowrap_ids)
            patcher.patch_tensor_operators(Tensor)
            patcher.patch_attr(Module, "__call__", module_call_wrapper)
            patcher.patch_attr(Module, "__getattr__", module_getattr_wrapper)
            result = call(self.root) if isinstance(root, Module) else call(None)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=getattr(fn, "__annotations__", {}).get("return"))  # fmt: skip
        self.submodule_paths = None
        return self.graph

    def _placeholders(
        self, fn: Callable[..., Any], skip_self: bool, concrete: dict[str, Any] | None
    ) -> Callable[[Any], Any]:
        """Make the placeholders of ``fn``'s parameters; returns how to call ``fn`` on them (given ``self``)."""
        concrete = dict(concrete or {})
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[1 if skip_self else 0 :]
        unknown = set(concrete) - {p.name for p in params}
        if unknown:
            raise TypeError(f"concrete_args names arguments that forward() does not have: {sorted(unknown)}")
        values: dict[str, Any] = {}
        for p in params:
            if p.kind == p.VAR_POSITIONAL:  # the whole tuple is one proxy, as in PyTorch
                values[p.name] = self.create_proxy("placeholder", f"*{p.name}", (), {}, name=f"_{p.name}")
                continue
            if p.kind == p.VAR_KEYWORD:
                values[p.name] = self.create_proxy("placeholder", f"**{p.name}", (), {}, name=f"_{p.name}")
                continue
            default = () if p.default is inspect.Parameter.empty else (p.default,)
            if p.name in concrete:
                value = concrete[p.name]
                ph = self.create_proxy("placeholder", f"{p.name}_1", default, {})  # as PyTorch names it
                if value is PH:
                    values[p.name] = ph
                    continue
                msg = f"{p.name} has been specialized to have value {value} but got another value"
                if value is None:
                    self.create_proxy("call_function", _assert_is_none, (ph, msg), {})
                elif isinstance(value, (bool, int, float, str)):
                    self.create_proxy("call_function", _assert, (ph == value, msg), {})
                values[p.name] = value
                continue
            values[p.name] = self.create_proxy("placeholder", p.name, default, {}, type_expr=_annotation(p))
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            flat = _without_varargs(fn)  # ``*args`` and ``**kwargs`` become plain parameters taking the proxies
            names = flat.__code__.co_varnames[: flat.__code__.co_argcount][1 if skip_self else 0 :]
            return lambda self_: flat(*([self_] if skip_self else []), *(values[n] for n in names))
        pos = [values[p.name] for p in params if p.kind != p.KEYWORD_ONLY]
        kw = {p.name: values[p.name] for p in params if p.kind == p.KEYWORD_ONLY}
        return lambda self_: fn(*([self_] if skip_self else []), *pos, **kw)


def _without_varargs(fn: Callable[..., Any]) -> Any:
    """``fn`` with its ``*args``/``**kwargs`` (and keyword-only parameters) turned into positional ones, in the
    order of ``co_varnames`` (how PyTorch hands a proxy for the whole ``args`` tuple to the traced code)."""
    fn = getattr(fn, "__func__", fn)
    co = fn.__code__
    n = co.co_argcount + co.co_kwonlyargcount + bool(co.co_flags & inspect.CO_VARARGS)
    n += bool(co.co_flags & inspect.CO_VARKEYWORDS)
    flags = co.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    code = co.replace(co_argcount=n, co_kwonlyargcount=0, co_posonlyargcount=0, co_flags=flags)
    return types.FunctionType(code, fn.__globals__, fn.__name__, None, fn.__closure__)


def _assert_is_none(value: Any, message: str) -> None:
    """Raise ``AssertionError(message)`` unless ``value`` is None (a ``concrete_args`` None was specialized)."""
    if value is not None:
        raise AssertionError(message)


def _annotation(p: inspect.Parameter) -> Any:
    return None if p.annotation is inspect.Parameter.empty else p.annotation


def Attribute_call(obj: Proxy, name: str) -> Any:  # noqa: N802 - small helper
    """``obj.name()`` recorded as a method call."""
    return obj.tracer.create_proxy("call_method", name, (obj,), {})


class GraphAppendingTracer(Tracer):
    """A tracer that appends to an existing graph (for proxies made around a ``Graph`` by hand)."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph


def symbolic_trace(root: Module | Callable[..., Any], concrete_args: dict[str, Any] | None = None) -> Any:
    """Trace ``root`` into a ``GraphModule`` (PyTorch's ``torch.fx.symbolic_trace``)."""
    from .graph_module import GraphModule

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else getattr(root, "__name__", "GraphModule")
    return GraphModule(tracer.root, graph, name)
