"""Recording function calls on proxies by patching while a trace runs (Ember has no ``__torch_function__``).

For the length of one ``Tracer.trace`` each public Python function of ``ember``, ``ember.nn.functional``,
``ember.special``, ``ember.linalg`` and ``ember.fft`` gets a trampoline as its ``__code__``: the same function
object (``is`` comparisons, dict keys and every name bound to it keep working) now records a ``call_function`` node
when an argument is a proxy and otherwise runs a copy of its original code. Builtin functions there, ``wrap``-ed
and autowrapped functions are swapped by name instead (in their namespaces and the traced code's globals), as fx's
own ``Patcher`` does; ``Module.__call__``/``__getattr__`` and Tensor's binary operators are replaced on their
classes. Every patch is undone when the trace ends, also on error, so eager calls never pay for tracing.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import sys
import types
from collections.abc import Callable
from typing import Any

from .proxy import Proxy

# the namespaces whose public functions are recorded
NAMESPACES = ("ember", "ember.nn.functional", "ember.special", "ember.linalg", "ember.fft")
# private names PyTorch records too (``torch._assert``: a check that does not branch on a traced value)
RECORDED_PRIVATE = frozenset({"_assert"})
# (id(globals), name) -> globals: the functions ``wrap("name")`` registered
WRAPPED: dict[tuple[int, str], dict[str, Any]] = {}
# a Tensor's binary operator with a proxy operand: recorded as PyTorch records it, a method call on the tensor
_TENSOR_BINARY = {
    "__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div", "__floordiv__": "__floordiv__",
    "__mod__": "remainder", "__pow__": "pow", "__matmul__": "matmul", "__and__": "__and__", "__or__": "__or__",
    "__xor__": "__xor__", "__lshift__": "__lshift__", "__rshift__": "__rshift__", "__eq__": "eq", "__ne__": "ne",
    "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
}  # fmt: skip


def find_proxy(args: Any, kwargs: Any) -> Proxy | None:
    """The first proxy in ``args``/``kwargs`` (searched through tuples, lists, dicts and slices), else None."""
    stack = [args, kwargs]
    while stack:
        a = stack.pop()
        if isinstance(a, Proxy):
            return a
        if isinstance(a, (tuple, list)):
            stack.extend(reversed(a))
        elif isinstance(a, dict):
            stack.extend(a.values())
        elif isinstance(a, slice):
            stack.extend((a.start, a.stop, a.step))
    return None


def _recording(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        proxy = find_proxy(args, kwargs)
        if proxy is not None:
            return proxy.tracer.create_proxy("call_function", orig, args, kwargs)
        return orig(*args, **kwargs)

    wrapper.__fx_original__ = orig  # type: ignore[attr-defined]
    return wrapper


_DISPATCH = "__ember_fx_dispatch__"
_NOT_PLAIN = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
# id(fn) -> (fn, its original code, a copy of fn running that code, the trampoline code)
_SWAPS: dict[int, tuple[Any, types.CodeType, Any, types.CodeType]] = {}


def _dispatch(key: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What a swapped function runs: record the call when an argument is a proxy, else run the original code."""
    fn, _, impl, _ = _SWAPS[key]
    proxy = find_proxy(args, kwargs)
    if proxy is not None:
        return proxy.tracer.create_proxy("call_function", fn, args, kwargs)
    return impl(*args, **kwargs)


def _swap_for(fn: types.FunctionType) -> tuple[Any, types.CodeType, Any, types.CodeType] | None:
    """The trampoline of ``fn`` (made once, kept), or None for a generator/coroutine."""
    entry = _SWAPS.get(id(fn))
    if entry is not None and entry[0] is fn:
        return entry
    code = fn.__code__
    if code.co_flags & _NOT_PLAIN:
        return None
    fv = [f"_fv{i}" for i in range(len(code.co_freevars))]  # the same number of free variables as fn's closure
    lines = ["def _make():", *(f"    {v} = None" for v in fv), "    def _t(*args, **kwargs):"]
    if fv:
        lines.append(f"        if False: ({', '.join(fv)},)")
    lines += [f"        return {_DISPATCH}({id(fn)}, args, kwargs)", "    return _t"]
    ns: dict[str, Any] = {}
    exec("\n".join(lines), ns)  # a fixed template: only the key and the count of free variables vary
    tramp = ns["_make"]().__code__.replace(co_freevars=code.co_freevars, co_name=code.co_name,
                                           co_qualname=code.co_qualname)  # fmt: skip
    impl = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    impl.__kwdefaults__ = fn.__kwdefaults__
    entry = (fn, code, impl, tramp)
    _SWAPS[id(fn)] = entry
    return entry


def is_patchable(obj: Any) -> bool:
    """A plain function (Python or builtin): the kind of name a trace records calls of."""
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)) and not hasattr(obj, "__fx_original__")


def namespace_functions() -> dict[int, Any]:
    """id -> function for the public functions of Ember's namespaces that cannot get a trampoline (builtins):
    those are swapped by name where the traced code's globals bind them."""
    out: dict[int, Any] = {}
    for ns in NAMESPACES:
        mod = sys.modules.get(ns)
        if mod is not None:
            for name, obj in list(vars(mod).items()):
                if name.startswith("_") or not is_patchable(obj):
                    continue
                if not isinstance(obj, types.FunctionType) or _swap_for(obj) is None:
                    out[id(obj)] = obj
    return out


class Patcher:
    """Records patches and undoes them (in reverse) on ``__exit__``."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []
        self._done: set[tuple[int, str]] = set()

    def __enter__(self) -> Patcher:
        return self

    def __exit__(self, *exc: object) -> None:
        while self._undo:
            self._undo.pop()()

    def patch(self, ns: dict[str, Any], name: str, new: Any) -> None:
        """``ns[name] = new`` until the patcher exits (a name absent before is removed again)."""
        key = (id(ns), name)
        if key in self._done:
            return
        self._done.add(key)
        if name in ns:
            old = ns[name]
            self._undo.append(lambda: ns.__setitem__(name, old))
        else:
            self._undo.append(lambda: ns.pop(name, None))
        ns[name] = new

    def patch_attr(self, obj: Any, name: str, new: Any) -> None:
        """``setattr(obj, name, new)`` until the patcher exits."""
        key = (id(obj), name)
        if key in self._done:
            return
        self._done.add(key)
        own = name in vars(obj)
        old = vars(obj).get(name)
        self._undo.append(lambda: setattr(obj, name, old) if own else delattr(obj, name))
        setattr(obj, name, new)

    def patch_globals(self, fn_globals: dict[str, Any], ids: dict[int, Any]) -> None:
        """Wrap every name of ``fn_globals`` bound to one of the functions in ``ids``."""
        for name, value in list(fn_globals.items()):
            if not name.startswith("__") and id(value) in ids and is_patchable(value):
                self.patch(fn_globals, name, _recording(value))

    def swap_code(self, fn: types.FunctionType) -> bool:
        """Give ``fn`` its trampoline until the patcher exits; False when it cannot have one."""
        entry = _swap_for(fn)
        if entry is None:
            return False
        if fn.__code__ is entry[3]:  # already swapped (a trace inside a trace)
            return True
        original = fn.__code__
        self._undo.append(lambda: setattr(fn, "__code__", original))
        fn.__code__ = entry[3]
        return True

    def patch_namespaces(self) -> None:
        """Record calls of the public functions of Ember's namespaces (and ``ember.conv2d``-style lazy ones),
        whatever name they are called by."""
        self.patch_attr(builtins, _DISPATCH, _dispatch)
        toplevel = sys.modules.get("ember.nn.functional._toplevel")
        ember = sys.modules["ember"]
        spaces = [(vars(sys.modules[ns]), vars(sys.modules[ns])) for ns in NAMESPACES if ns in sys.modules]
        spaces.append((vars(ember), getattr(toplevel, "NAMES", {})))
        for d, names in spaces:
            for name, obj in list(names.items()):
                if (name.startswith("_") and name not in RECORDED_PRIVATE) or not is_patchable(obj):
                    continue
                if isinstance(obj, types.FunctionType) and self.swap_code(obj):
                    continue
                if names is d or name not in d:  # a builtin function: swapped by name
                    self.patch(d, name, _recording(obj))

    def patch_wrapped(self) -> None:
        """Wrap the functions registered by ``wrap``."""
        for (_, name), g in list(WRAPPED.items()):
            if name in g and is_patchable(g[name]):
                self.patch(g, name, _recording(g[name]))
            elif name not in g and hasattr(__import__("builtins"), name):
                self.patch(g, name, _recording(getattr(__import__("builtins"), name)))

    def patch_tensor_operators(self, tensor_cls: type) -> None:
        """``tensor * proxy`` records ``call_method`` ``mul`` on the tensor (PyTorch's record of it)."""
        for dunder, method in _TENSOR_BINARY.items():
            orig = getattr(tensor_cls, dunder, None)
            if orig is not None:
                self.patch_attr(tensor_cls, dunder, _tensor_operator(orig, method))


def _tensor_operator(orig: Callable[..., Any], method: str) -> Callable[..., Any]:
    @functools.wraps(orig)
    def op(self: Any, other: Any) -> Any:
        if isinstance(other, Proxy):
            return other.tracer.create_proxy("call_method", method, (self, other), {})
        return orig(self, other)

    return op


def wrap(fn_or_name: str | Callable[..., Any]) -> Any:
    """Record calls of a module-level function as ``call_function`` nodes instead of tracing through it.

    Call at module scope: ``fx.wrap("my_fn")`` or ``fx.wrap(my_fn)`` (also usable as a decorator)."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or string name")
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    if callable(fn_or_name) and fn_or_name.__code__.co_name == "<lambda>":  # type: ignore[union-attr]
        raise RuntimeError("wrap must be called on the name of a function, not a lambda")
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is None or caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    WRAPPED[(id(caller.f_globals), name)] = caller.f_globals
    return fn_or_name
