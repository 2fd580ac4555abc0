"""The accelerator-path run's detector of device-side asserts (installed by ``tests/conftest.py``).

On CUDA an out-of-range index reaching one of torch's indexing kernels (advanced indexing, ``index_put_``,
``index_select``, ``gather``, ``scatter*``, ``take``, ``embedding``, ``nll_loss``, ...) is no error that code can
catch: the kernel's assert fires on the device, and every later CUDA call of the process fails ("device-side
assert triggered"). On the CPU the same kernel raises an ``IndexError`` or a ``RuntimeError``, which a test
expecting an error accepts. So in the accelerator-path run (``EMBER_TEST_ACCEL=1``, torch-CPU taking the
accelerator's paths) torch's indexing functions (``_RULES``: as ``torch.*``, ``torch.Tensor`` methods,
``torch.nn.functional`` and ``torch.ops.aten`` entries) are wrapped to check their index arguments against the
dims they index before they run; a call from Ember's code with an index out of range is recorded (the test
fails, even where it catches the error) and raised as :class:`DeviceAssert`. Calls from the tests' own PyTorch
reference code are left to PyTorch (they run on the CPU on a GPU machine too).

Wrappers of these entry points only, so nothing else pays or changes: no mode sees every torch call (under any
``TorchDispatchMode`` torch 2.13 computes complex ``linalg.pinv`` wrong; a ``TorchFunctionMode`` calls a test's
monkeypatched ``Tensor.cpu`` twice). The wrapper's own frame reads as torch's, by module and by file, to code
that tells library frames from the user's (warnings' ``stacklevel`` and the suite's ``ignore::...:torch.*``
filters, ember.compile's capture sites).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import torch


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
# The wrapper, compiled as if it were torch's own code (see the module's doc): it calls ``check`` (this module's)
# before the function, and nothing of this module is on the stack while the function runs.
_WRAPPER = """
def wrap(original, name, rule, check):
    def call(*args, **kwargs):
        check(name, rule, args, kwargs)
        return original(*args, **kwargs)
    call.__name__, call.__qualname__, call.__doc__ = name, getattr(original, "__qualname__", name), original.__doc__
    call.__wrapped__ = original
    return call

class Packet:
    def __init__(self, packet, name, rule, check):
        self._packet, self._call = packet, wrap(packet, name, rule, check)
    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)
    def __getattr__(self, attr):
        return getattr(self._packet, attr)
"""
_NS: dict[str, Any] = {"__name__": "torch._ember_device_asserts"}
exec(compile(_WRAPPER, os.path.join(_TORCH_DIR, "_ember_device_asserts.py"), "exec"), _NS)

_TENSOR = ("__getitem__", "__setitem__", "index_put", "index_put_", "index_select", "index_add", "index_add_",
           "index_copy", "index_copy_", "index_fill", "index_fill_", "index_reduce", "index_reduce_", "gather",
           "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_", "take",
           "take_along_dim", "put", "put_")  # fmt: skip
_FUNCTIONAL = ("embedding", "embedding_bag", "nll_loss", "cross_entropy", "one_hot", "multi_margin_loss")
_ATEN = ("index", "index_put", "index_put_", "_index_put_impl_", "_unsafe_index", "_unsafe_index_put",
         "nll_loss_forward", "nll_loss2d_forward", "nll_loss_backward", "nll_loss2d_backward", "nll_loss_nd",
         "max_unpool2d", "max_unpool3d")  # fmt: skip


def _from_ember() -> bool:
    """Whether the innermost caller outside torch (and this module) is Ember's code (not a test's PyTorch)."""
    f = sys._getframe(2)
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not (mod == __name__ or mod == "torch" or mod.startswith("torch.")):
            return mod.startswith("ember.") and not mod.startswith("ember.testing")
        f = f.f_back  # type: ignore[assignment]
    return False


class DeviceAssertDetector:
    """Wraps torch's indexing functions (``install``) to check the indices Ember's code hands them; ``found``
    lists the failures since it was last emptied."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def _check(self, name: str, rule: Rule, args: tuple, kwargs: dict) -> None:
        if not args or not isinstance(args[0], torch.Tensor):
            return
        try:
            with torch._C._DisableTorchDispatch():  # the check's own kernels: unseen by a test's dispatch mode
                problem = rule(args, kwargs)
        except (TypeError, ValueError, IndexError, RuntimeError, AttributeError):
            problem = None  # arguments torch itself refuses: its own error follows
        if problem and _from_ember():
            message = (
                f"{name}: {problem}: on CUDA a device-side assert (every later CUDA call of the process fails); "
                "Ember must refuse it first where the host knows the index's range"
            )
            self.found.append(message)
            raise DeviceAssert(message)

    def install(self) -> DeviceAssertDetector:
        """Wrap the entry points (for the rest of the process)."""
        wrap, packet = _NS["wrap"], _NS["Packet"]
        owners = [(torch.Tensor, _TENSOR), (torch, [n for n in _RULES if n not in ("__getitem__", "__setitem__")]),
                  (torch.nn.functional, _FUNCTIONAL)]  # fmt: skip
        for owner, names in owners:
            for name in names:
                original = owner.__dict__.get(name) if owner is torch.Tensor else getattr(owner, name, None)
                if original is None and owner is torch.Tensor:
                    original = getattr(owner, name, None)
                if callable(original):
                    setattr(owner, name, wrap(original, name, _RULES[name], self._check))
        for name in _ATEN:
            op = getattr(torch.ops.aten, name, None)
            if op is not None:
                setattr(torch.ops.aten, name, packet(op, name, _RULES[name], self._check))
        return self
