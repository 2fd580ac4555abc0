"""The accelerator-path run's detector of device-side asserts (installed by ``tests/conftest.py``).

On CUDA an out-of-range index reaching one of torch's indexing kernels (advanced indexing, ``index_put_``,
``index_select``, ``gather``, ``scatter*``, ``take``, ``embedding``, ``nll_loss``, ...) is no error that code can
catch: the kernel's assert fires on the device, and every later CUDA call of the process fails ("device-side
assert triggered"). On the CPU the same kernel raises an ``IndexError`` or a ``RuntimeError``, which a test
expecting an error accepts. So in the accelerator-path run (``EMBER_TEST_ACCEL=1``, torch-CPU taking the
accelerator's paths) a ``TorchFunctionMode``, on during each test, checks the index arguments of torch's indexing
functions (``_RULES``, by name: ``Tensor.__getitem__``, ``torch.ops.aten.index_put_``, ``torch.take_along_dim``,
...) against the dims they index before they run; a call from Ember's code with an index out of range is
recorded (the test fails, even where it catches the error) and raised as :class:`DeviceAssert`. Calls from the
tests' own PyTorch reference code are left to PyTorch (they run on the CPU on a GPU machine too).

The mode must change nothing else. A function mode, not a dispatch mode: under any ``TorchDispatchMode`` torch
2.13 computes complex ``linalg.pinv`` wrong (its conjugate views read as plain transposes). Not wrappers of the
functions: a Python ``__getitem__`` on ``torch.Tensor`` makes every tensor a sequence (``torch.tensor([t])`` of
a 0-d ``t`` then fails, as torch.onnx's exporter did). The handler is compiled as torch's own code (module and
file), so warnings' ``stacklevel``, the suite's ``ignore::...:torch.*`` filters and ember.compile's capture
sites see what they see without it; it runs a test's monkeypatch of a ``Tensor`` method once, not twice; the
check's own kernels are hidden from a test's dispatch mode and from a torch.jit trace. It costs about 3 us per
torch call, and a min and a max of the index per indexing call from Ember.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode


class DeviceAssert(Exception):  # noqa: N818 - named for what it stands for; no RuntimeError, so no test catches it
    """An index that would fire a device-side assert on CUDA (raised in the accelerator-path run)."""


_item = torch._C.TensorBase.item  # (not Tensor.item: a test may watch for read-backs of device values)
Rule = Callable[[tuple, dict], "str | None"]


def _bad(t: Any, low: float, high: float) -> tuple[int, int] | None:
    """``(min, max)`` of an integer tensor ``t`` when a value lies outside ``[low, high)``."""
    if not isinstance(t, torch.Tensor) or t.is_meta or not t.numel():
        return None
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype in (torch.bool, torch.uint8):
        return None  # no index (a bool or uint8 mask is checked by shape, on the host)
    lo, hi = (_item(v) for v in torch.aminmax(t))
    return (lo, hi) if lo < low or hi >= high else None


def _arg(args: tuple, kwargs: dict, pos: int, name: str, default: Any = None) -> Any:
    return args[pos] if len(args) > pos else kwargs.get(name, default)


def _say(bad: tuple[int, int] | None, what: str) -> str | None:
    return bad and f"index in [{bad[0]}, {bad[1]}] for {what}"


def _subscript(args: tuple, kwargs: dict) -> str | None:
    """``x[index]`` and ``x[index] = v``: NumPy's rules (``None`` adds a dim, ``...`` the rest, a mask its own)."""
    x, index = args[0], args[1]
    items = list(index) if isinstance(index, (tuple, list)) and not _is_int_list(index) else [index]
    used = [it.dim() if _is_mask(it) else 0 if it is None or it is Ellipsis else 1 for it in items]
    dim = 0
    for it, k in zip(items, used, strict=True):
        if it is Ellipsis:
            dim += x.dim() - sum(used)
            continue
        if dim < x.dim() and not _is_mask(it):
            n = x.shape[dim]
            bad = _bad(torch.as_tensor(it) if _is_int_list(it) else it, -n, n)
            if bad:
                return _say(bad, f"dim {dim} of size {n}")
        dim += k
    return None


def _is_mask(it: Any) -> bool:
    return isinstance(it, torch.Tensor) and it.dtype in (torch.bool, torch.uint8)


def _is_int_list(it: Any) -> bool:
    return isinstance(it, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in it)


def _indices(args: tuple, kwargs: dict) -> str | None:
    """``aten.index_put_(self, indices, values, ...)``: ``indices[k]`` (or None) addresses dim k; a mask its own."""
    x, dim = args[0], 0
    for it in _arg(args, kwargs, 1, "indices"):
        if _is_mask(it):
            dim += it.dim()
            continue
        if it is not None and dim < x.dim():
            bad = _bad(it, -x.shape[dim], x.shape[dim])
            if bad:
                return _say(bad, f"dim {dim} of size {x.shape[dim]}")
        dim += 1
    return None


def _along(wraps: bool) -> Rule:
    """``f(x, dim, index, ...)``: ``index`` addresses ``x``'s ``dim``, in ``[-n, n)`` where ``wraps``, else in
    ``[0, n)``."""

    def rule(args: tuple, kwargs: dict) -> str | None:
        x, dim = args[0], _arg(args, kwargs, 1, "dim")
        if not isinstance(dim, int):  # a dim name
            return None
        n = x.shape[dim] if x.dim() else 1
        return _say(_bad(_arg(args, kwargs, 2, "index"), -n if wraps else 0, n), f"dim {dim} of size {n}")

    return rule


def _take_along_dim(args: tuple, kwargs: dict) -> str | None:
    x, idx, dim = args[0], _arg(args, kwargs, 1, "indices"), _arg(args, kwargs, 2, "dim")
    if dim is None:  # the flattened input, by gather: no negative index
        return _say(_bad(idx, 0, x.numel()), f"{x.numel()} elements")
    n = x.shape[dim] if x.dim() else 1
    return _say(_bad(idx, 0, n), f"dim {dim} of size {n}")


def _flat(args: tuple, kwargs: dict) -> str | None:  # take(x, index), put_(x, index, source)
    n = args[0].numel()
    return _say(_bad(_arg(args, kwargs, 1, "index"), -n, n), f"{n} elements")


def _rows(args: tuple, kwargs: dict) -> str | None:
    """``torch.embedding(weight, indices)``, ``F.embedding(input, weight)`` (and ``*embedding_bag``)."""
    a, b = args[0], _arg(args, kwargs, 1, "weight")
    weight, idx = (a, b) if a.dtype.is_floating_point or a.dtype.is_complex else (b, a)
    return _say(_bad(idx, 0, weight.shape[0]), f"{weight.shape[0]} rows")


def _classes(target_pos: int, ignore_pos: int) -> Rule:
    """Class indices in ``[0, C)`` but ``ignore_index``: the nll_loss kernels (input before target, both at
    ``target_pos - 1`` and ``target_pos``; ``ignore_index`` at ``ignore_pos``)."""

    def rule(args: tuple, kwargs: dict) -> str | None:
        x, target = args[target_pos - 1], _arg(args, kwargs, target_pos, "target")
        if not isinstance(target, torch.Tensor) or target.dtype.is_floating_point:  # class probabilities
            return None
        c = x.shape[1] if x.dim() >= 2 else x.shape[0]
        ignore = _arg(args, kwargs, ignore_pos, "ignore_index", -100)
        return _say(_bad(target[target != ignore], 0, c), f"{c} classes")

    return rule


def _one_hot(args: tuple, kwargs: dict) -> str | None:
    n = _arg(args, kwargs, 1, "num_classes", -1)
    return _say(_bad(args[0], 0, n if n >= 0 else float("inf")), f"{n} classes")


def _unpool(args: tuple, kwargs: dict) -> str | None:  # aten.max_unpool2d/3d(self, indices, output_size, ...)
    n = 1
    for s in _arg(args, kwargs, 2, "output_size"):
        n *= int(s)
    return _say(_bad(_arg(args, kwargs, 1, "indices"), 0, n), f"{n} output positions")


_RULES: dict[str, Rule] = {
    "__getitem__": _subscript,
    "__setitem__": _subscript,
    **dict.fromkeys(["index_put", "index_put_", "_index_put_impl_", "_unsafe_index_put", "_unsafe_index", "index"],
                    _indices),
    **dict.fromkeys(["index_select", "index_add", "index_add_", "index_copy", "index_copy_", "index_reduce",
                     "index_reduce_", "gather", "scatter", "scatter_", "scatter_add", "scatter_add_",
                     "scatter_reduce", "scatter_reduce_"], _along(False)),
    **dict.fromkeys(["index_fill", "index_fill_"], _along(True)),
    "take_along_dim": _take_along_dim,
    **dict.fromkeys(["take", "put", "put_"], _flat),
    **dict.fromkeys(["embedding", "embedding_bag", "_embedding_bag", "_embedding_bag_forward_only"], _rows),
    **dict.fromkeys(["nll_loss_forward", "nll_loss2d_forward", "nll_loss_nd", "nll_loss", "nll_loss2d",
                     "cross_entropy", "cross_entropy_loss"], _classes(1, 4)),
    **dict.fromkeys(["nll_loss_backward", "nll_loss2d_backward"], _classes(2, 5)),
    "multi_margin_loss": _classes(1, 99),
    "one_hot": _one_hot,
    **dict.fromkeys(["max_unpool2d", "max_unpool3d"], _unpool),
}  # fmt: skip


_TORCH_DIR = os.path.dirname(torch.__file__)
_PROGRAM_FILE = "<ember.compile program>"  # (src/ember/_compile/_program.py compiles its replays as this file)
# The mode's handler, compiled as if it were torch's own code (module and file; see the module's doc).
_HANDLER = """
def handler(self, func, types, args=(), kwargs=None):
    kwargs = kwargs or {}
    rule = rules.get(getattr(func, "__name__", "").split(".")[0])
    if rule is not None:
        self._check(func, rule, args, kwargs)
    if type(func) is FunctionType and not func.__module__.startswith("torch"):  # a test's patch of a Tensor
        name = next((k for k, v in vars(Tensor).items() if v is func), None)  # method: it ran already, so the
        original = getattr(TensorBase, name, None) if name else None  # method it wraps runs now, not it again
        if original is not None:
            func = original
    return func(*args, **kwargs)
"""
_NS: dict[str, Any] = {"__name__": "torch._ember_device_asserts", "rules": _RULES, "FunctionType": types.FunctionType,
                       "Tensor": torch.Tensor, "TensorBase": torch._C.TensorBase}  # fmt: skip
_MODULE = types.ModuleType(_NS["__name__"])  # a module by that name too: torch.compile's tracer imports it
_MODULE.__dict__.update(_NS)
_MODULE.__file__ = os.path.join(_TORCH_DIR, "_ember_device_asserts.py")
_NS = _MODULE.__dict__
sys.modules[_MODULE.__name__] = _MODULE
exec(compile(_HANDLER, _MODULE.__file__, "exec"), _NS)


def _from_ember() -> bool:
    """Whether the innermost caller outside torch (and this module) is Ember's code (not a test's PyTorch): an
    ``ember`` module, or the replay of a program ``ember.compile`` generated (its own file name, no module)."""
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_filename == _PROGRAM_FILE:
            return True
        mod = f.f_globals.get("__name__", "")
        if not (mod == __name__ or mod == "torch" or mod.startswith("torch.")):
            return mod.startswith("ember.") and not mod.startswith("ember.testing")
        f = f.f_back  # type: ignore[assignment]
    return False


def _kernels_through_op() -> None:
    """Ember's torch kernels without a Python binding (``kernels._aten``) run through the dispatcher's boxed entry,
    below torch-function modes: in the detector's run they go through ``OpOverload._op``, which the mode sees (the
    same kernels and bits)."""
    from ember.backends.torch import kernels

    kernels._aten.cache_clear()
    kernels._boxed = lambda name: getattr(torch.ops.aten, name).default._op


class DeviceAssertDetector(TorchFunctionMode):
    """Checks the index arguments of torch's indexing functions called from Ember; ``found`` lists failures."""

    __torch_function__ = _NS["handler"]

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        _kernels_through_op()

    def _check(self, func: Any, rule: Rule, args: tuple, kwargs: dict) -> None:
        if not args or not isinstance(args[0], torch.Tensor) or torch._C._get_tracing_state() is not None:
            return  # (a torch.jit trace would record the check's own kernels)
        if not _from_ember():
            return
        try:
            with torch._C._DisableTorchDispatch():  # the check's own kernels: unseen by a test's dispatch mode
                problem = rule(args, kwargs)
        except (TypeError, ValueError, IndexError, RuntimeError, AttributeError):
            problem = None  # arguments torch itself refuses: its own error follows
        if problem:
            name = str(getattr(func, "__name__", func)).split(".")[0]
            message = (
                f"{name}: {problem}: on CUDA a device-side assert (every later CUDA call of the process fails); "
                "Ember must refuse it first where the host knows the index's range"
            )
            self.found.append(message)
            raise DeviceAssert(message)
