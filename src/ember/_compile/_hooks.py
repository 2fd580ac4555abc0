"""Installing a tracer: what changes in the process while one step is captured, and is put back after.

Everything here is swapped in for the capture only, so eager code pays nothing: ``Tensor._data`` and
``Tensor.grad`` become recording properties (the slots' own descriptors are kept and restored), the Tensor
methods that read values (``item``, ``float()``, ``bool()``, ``numpy``, printing) report to the tracer,
NumPy's creation functions are recorded (``_ndarray.patch_numpy``), and each backend's random draws
(``uniform``, ``normal``, ``randint``, ``standard_gamma``, ``dropout_mask``) become recorded calls, and public
``ember.distributed`` calls come to ``_on_collective`` (a host step, or a reason to run eagerly). Other
threads see the same objects but are never recorded (the tracer checks the thread).
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..autograd._capture import CAPTURE
from ._instr import _DATA
from ._ndarray import _record, patch_numpy, tracer_here, unpatch_numpy
from ._tracer import Tracer

__all__ = ["install", "uninstall"]

_READS = ("item", "tolist", "numpy", "__float__", "__int__", "__bool__", "__index__", "__repr__", "__str__",
          "__format__", "__array__")  # fmt: skip
_RNG = ("uniform", "normal", "randint", "standard_gamma", "dropout_mask")
_LOCK = threading.Lock()


def _get_data(t: Tensor) -> Any:
    a = _DATA.__get__(t)
    tr = CAPTURE.tracer
    if tr is None or (a.__class__ is not _np_array and getattr(a, "_g", -1) == tr.gen):
        return a
    return tr.on_get_data(t, a)


def _set_data(t: Tensor, v: Any) -> None:
    tr = CAPTURE.tracer
    if tr is not None:
        tr.on_set_data(t, v)
    _DATA.__set__(t, v)


def _grad_property(desc: Any, cls: type) -> property:
    def get(t: Tensor) -> Any:
        g = desc.__get__(t, cls)
        tr = CAPTURE.tracer
        if tr is not None:
            tr.on_get_grad(t, g)
        return g

    def set_(t: Tensor, v: Any) -> None:
        tr = CAPTURE.tracer
        if tr is not None and tr.here() and id(t) not in tr.born:
            try:
                current = desc.__get__(t, cls)
            except AttributeError:  # a tensor being made while recording is paused
                current = None
            tr.on_set_grad(t, v, current)
        desc.__set__(t, v)

    return property(get, set_, doc=getattr(desc, "__doc__", None))


def _read_method(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        tr = tracer_here()
        if tr is None:
            return fn(self, *args, **kwargs)
        return tr.tensor_read(self, name, fn, args, kwargs)

    method.__name__ = name
    return method


def _rng_method(tr: Tracer, bound: Callable[..., Any]) -> Callable[..., Any]:
    def draw(*args: Any, **kwargs: Any) -> Any:
        return tr.rng(bound, args, kwargs)

    return draw


def _index_check(idx: Any, low: int, high: int, backend: Any) -> tuple[int, int] | None:
    """``ops._util.index_out_of_range`` while recording: it first reads one bool (whether any index is out of
    range), so the program guards on that and not on the batch's smallest and largest index."""
    from ..ops import _util

    if not _util.size_of(idx):
        return None
    if not backend.host_checks:  # torch-CUDA: the range the host knows, if any; no device read, so no guard
        return _util.index_out_of_range(idx, low, high, backend)  # type: ignore[no-any-return]
    if not bool(backend.xp.any((idx < low) | (idx >= high))):
        return None
    return _util.index_out_of_range(idx, low, high, backend)  # type: ignore[no-any-return]


#: ``ember.distributed`` calls that a replay makes again as host steps, at the same point, on the arrays recorded
#: (so every rank makes the same calls in the same order as eager); the tensors they write hold values from then
#: on (a later ``.item()`` of one is a read on the host). Other public calls (point to point, objects, barrier,
#: scatter and gather) make the step run eagerly.
_RECORDED = ("all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor")


def _collective(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


_collective.__ember_collective__ = True  # type: ignore[attr-defined]


def _on_collective(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A public ``ember.distributed`` call while a step is captured (``autograd._capture.distributed_call``)."""
    tr = tracer_here()
    if tr is None:
        return fn(*args, **kwargs)
    name = fn.__name__
    if name not in _RECORDED:
        tr.flag(f"a distributed call ({name}) runs inside it (not captured)")
        return fn(*args, **kwargs)
    import inspect

    try:
        async_op = inspect.signature(fn).bind(*args, **kwargs).arguments.get("async_op", False)
    except TypeError:
        return fn(*args, **kwargs)  # its own error
    if async_op:
        tr.flag(f"a distributed collective ({name}) with async_op=True runs inside it (its wait() is not captured)")
        return fn(*args, **kwargs)
    return tr.opaque(_collective, (fn, *args), kwargs)


def _substitute_checks() -> None:
    """Swap Ember's value checks for their recording-friendly equivalents wherever they were imported."""
    from ..ops import _util

    subs: dict[int, Any] = {id(_util.index_out_of_range): _index_check}
    for name, mod in list(sys.modules.items()):
        if mod is None or not name.startswith("ember.") or name.startswith("ember._compile"):
            continue
        for attr, value in list(vars(mod).items()):
            new = subs.get(id(value))
            if new is not None and mod is not _util:
                _swap(mod, attr, new)


def _fresh_scratch(ws: Any, shape: Any, dtype: Any) -> Any:
    return ws.xp.empty(shape, dtype=dtype)


def _keep_scratch(ws: Any, a: Any) -> None:
    return None


def _get_rng(tr: Tracer, gen: Any) -> Any:
    rng = gen.__dict__["_rng"]
    tr.rng_holders[id(rng)] = gen
    return rng


def _set_rng(gen: Any, rng: Any) -> None:
    gen.__dict__["_rng"] = rng


_np_array: Any = None
_saved: list[tuple[Any, str, Any, bool]] = []  # (owner, name, previous value, was in owner.__dict__)


def _defined(cls: type, name: str) -> Any:
    """``name`` as ``cls`` or the first class of its MRO defines it (Tensor's mixins hold some of its methods)."""
    return next(vars(c)[name] for c in cls.__mro__ if name in vars(c))


def _swap(owner: Any, name: str, value: Any) -> None:
    had = name in vars(owner)
    _saved.append((owner, name, vars(owner).get(name), had))
    setattr(owner, name, value)


def install(tr: Tracer) -> None:
    """Make ``tr`` the tracer of this process (one capture at a time)."""
    global _np_array
    import numpy as np

    _np_array = np.ndarray
    _LOCK.acquire()
    try:
        patch_numpy()
        _swap(Tensor, "_data", property(_get_data, _set_data))
        classes: list[type] = [Tensor]
        param = sys.modules.get("ember.nn.parameter")
        if param is not None:
            classes.append(param.Param)
        for cls in classes:
            if cls is Tensor or "grad" in vars(cls):  # a subclass without its own ``grad`` uses Tensor's
                _swap(cls, "grad", _grad_property(_defined(cls, "grad"), cls))
        for name in _READS:
            _swap(Tensor, name, _read_method(name, _defined(Tensor, name)))
        from .._creation import Generator
        from ..backends._kernels_util import Workspace

        # scratch arrays from the backends' pools would be constants of the program, yet other code writes
        # them between replays: while recording, every scratch array is a fresh (recorded) one
        _swap(Workspace, "take", _fresh_scratch)
        _swap(Workspace, "give", _keep_scratch)

        _swap(Generator, "_rng", property(functools.partial(_get_rng, tr), _set_rng))
        from ..backends import _CACHE

        for be in list(_CACHE.values()):
            for name in _RNG:
                _swap(be, name, _rng_method(tr, getattr(be, name)))
        _substitute_checks()
        _swap(CAPTURE, "on_collective", _on_collective)
        from ..backends import _kernels_threads

        # threaded NumPy kernels: recorded as one call each (their pool threads' work is not seen otherwise)
        _swap(_kernels_threads, "recorder", _record)
        from . import _cupy_trace
        from ._known import array_types

        cupy = sys.modules.get("cupy")
        try:
            recorded = _cupy_trace.install(_swap) if cupy is not None and _cupy_used() else False
        except Exception:  # pragma: no cover - a CuPy unlike the ones read: its arrays stay unrecorded (eager)
            recorded = False
        tr.array_types = tuple(c for c in array_types() if recorded or c is not getattr(cupy, "ndarray", None))
        CAPTURE.tracer = tr
        # real torch (not Ember standing in for it, whose ``_C`` is ``ember._C``): a dispatch mode
        if getattr(getattr(sys.modules.get("torch"), "_C", None), "__name__", None) == "torch._C":
            from ._torch_trace import Recorder

            tr.mode = Recorder(tr)
            tr.mode.__enter__()
    except BaseException:
        _undo()
        _LOCK.release()
        raise


def _cupy_used() -> bool:
    """Whether a CuPy backend was made (its calls are then recorded; importing CuPy alone is not enough)."""
    from ..backends import _CACHE

    return any(be.name == "cupy" for be in list(_CACHE.values()))


def _undo() -> None:
    while _saved:
        owner, name, prev, had = _saved.pop()
        if had:
            setattr(owner, name, prev)
        else:
            delattr(owner, name)
    unpatch_numpy()


def uninstall(tr: Tracer) -> None:
    """Put everything back; externals get their own arrays again."""
    CAPTURE.tracer = None
    if tr.mode is not None:
        tr.mode.__exit__(None, None, None)
        tr.mode = None
    try:
        _undo()
        for t, a in tr.restore:
            _DATA.__set__(t, a)
    finally:
        _LOCK.release()
