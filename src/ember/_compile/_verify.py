"""The first replay of a program is checked against eager, bit for bit, before it is trusted.

On the call after a capture the program runs, what it changed is kept, the state is put back, and the step runs
eagerly; the two results and the two states must be identical (outputs, every tensor the step read from outside,
the gradients, the optimizers' state, the generators). The caller gets eager's result either way. A difference
means the recording missed something (a computation NumPy could not show us): the function then stays eager.

On a GPU two eager runs of one step differ already: cuDNN's convolution backward, ``index_add`` and other kernels
sum with atomics, in an order that changes from run to run. There, unless ``use_deterministic_algorithms(True)`` is
on, both runs of the check take torch's deterministic kernels (``deterministic_kernels``; the program replays
with the usual ones afterwards), and a kernel that has no deterministic form is allowed the rounding of
reordered sums: a tensor that is not bit-identical passes when what the step changed in it agrees within that
rounding (``_close``: the change from the state before the step, so that a missed learning rate or a stale value
still fails however small the step).
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .._tensor import Tensor
from ._instr import _DATA, _GRAD, _Opaque
from ._tracer import Tracer

__all__ = ["Snapshot", "atomics_may_differ", "deterministic_kernels", "same_outputs"]

#: how far a change may move under reordered float sums, relative to the largest change in the tensor
_RTOL = {2: 2e-2, 4: 1e-3, 8: 1e-6}
#: the rounding unit of a float of that many bytes (2: bfloat16's, the coarser of the two)
_EPS = {2: 2.0**-7, 4: 2.0**-23, 8: 2.0**-52}


def _copy(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        return np.array(a, copy=True)
    c = getattr(a, "clone", None)  # torch
    return c() if callable(c) else a.copy()  # (CuPy: a device copy)


def _bits_equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    if isinstance(a, np.ndarray):
        return a.tobytes() == b.tobytes()
    if not hasattr(a, "untyped_storage"):  # CuPy: compared on the host (once per program)
        return bool(a.get().tobytes() == b.get().tobytes())
    import torch

    if a.dtype.is_floating_point or a.dtype.is_complex:
        return bool(
            torch.equal(a.reshape(-1).contiguous().view(torch.uint8), b.reshape(-1).contiguous().view(torch.uint8))
        )
    return bool(torch.equal(a, b))


def _host(a: Any) -> np.ndarray:
    """float64 host values (torch, CuPy or NumPy)."""
    if hasattr(a, "untyped_storage"):
        return a.detach().to(dtype=_torch_float(a)).cpu().numpy().astype(np.float64)
    get = getattr(a, "get", None)
    return np.asarray(get() if callable(get) else a, dtype=np.float64)


def _torch_float(a: Any) -> Any:
    import torch

    return torch.float64 if a.dtype == torch.float64 else torch.float32


def _close(a: Any, b: Any, before: Any = None) -> bool:
    """Whether ``a`` and ``b`` (one shape and dtype) differ only as reordered float sums make them: their changes
    from ``before`` agree within ``_RTOL`` of the largest change plus two units of rounding of each value, and
    NaN stays NaN. Other dtypes: bit for bit."""
    if type(a) is not type(b) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    fp = getattr(a.dtype, "is_floating_point", None)  # torch's dtypes; NumPy's and CuPy's are NumPy dtypes
    if not (fp if fp is not None else np.dtype(a.dtype).kind == "f"):
        return _bits_equal(a, b)
    x, y = _host(a), _host(b)
    value = np.maximum(np.abs(x), np.abs(y))
    if before is not None and getattr(before, "shape", None) == a.shape:
        base = _host(before)
        x, y = x - base, y - base
    nan = np.isnan(x)
    if not np.array_equal(nan, np.isnan(y)):
        return False
    x, y, value = x[~nan], y[~nan], value[~nan]
    if x.size == 0:
        return True
    scale = max(float(np.abs(x).max()), float(np.abs(y).max()))
    bound = _RTOL.get(a.itemsize, 1e-3) * scale + 2.0 * _EPS.get(a.itemsize, 2.0**-7) * value
    return bool(np.all(np.abs(x - y) <= bound))


def atomics_may_differ(arrays: list[Any]) -> bool:
    """Whether two eager runs over these arrays may differ in their last bits: GPU arrays (torch CUDA, CuPy)
    while ``use_deterministic_algorithms(True)`` is off."""
    from .._determinism import are_deterministic_algorithms_enabled

    gpu = any(getattr(a, "is_cuda", False) or type(a).__module__.startswith("cupy") for a in arrays)
    return gpu and not are_deterministic_algorithms_enabled()


@contextlib.contextmanager
def deterministic_kernels(on: bool) -> Iterator[None]:
    """torch's deterministic kernels (cuDNN's too) while the check runs, when ``on``; kernels without a
    deterministic form only warn, and the warnings are the check's own, so they are not shown."""
    from ..backends import real_torch

    torch = real_torch() if on else None
    if torch is None or torch.are_deterministic_algorithms_enabled():
        yield
        return
    was = torch.is_deterministic_algorithms_warn_only_enabled()
    torch._C._set_deterministic_algorithms(True, warn_only=True)  # (torch's setter also imports its inductor)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"(?s).*deterministic", category=UserWarning)
            yield
    finally:
        torch._C._set_deterministic_algorithms(False, warn_only=was)


class Snapshot:
    """The state a program may change: taken before the replay, compared after each run, put back."""

    def __init__(self, tr_state: dict[str, Any], inputs: list[Tensor]) -> None:
        # the recording's input tensors (int positions) stand for this call's
        pick = lambda xs: list({id(t): t for t in (inputs[x] if isinstance(x, int) else x for x in xs)}.values())  # noqa: E731
        self.tensors: list[Tensor] = pick(tr_state["tensors"])
        self.leaves: list[Tensor] = pick(tr_state["leaves"])
        self.optimizers: list[Any] = tr_state["optimizers"]
        self.generators: list[Any] = tr_state["generators"]
        self.stateful: list[Any] = tr_state["stateful"]
        self.before = self._take()
        self.inexact = 0  # how many tensors passed within rounding, not bit for bit (``differences(close=True)``)

    @staticmethod
    def of(tr: Tracer, inputs: list[Tensor]) -> dict[str, Any]:
        """What to watch, from a recording (held by the cache entry until its first replay is checked)."""
        tensors = [p for k, p in tr.slots if k == "ext"] + list(inputs)
        leaves = [leaf for leaf, _, _ in tr.grad_state.values()]
        optimizers, generators, stateful = [], [], []
        for ins in tr.instrs:
            if ins.kind == "g":
                leaves.append(ins.args[0])
            elif ins.kind == "o" and isinstance(ins.fn, _Opaque):
                owner: Any = ins.args[0] if ins.args else None
                if hasattr(owner, "param_groups") and hasattr(owner, "state"):
                    optimizers.append(owner)
                    for g in owner.param_groups:
                        tensors += g["params"]
                        leaves += g["params"]
                elif isinstance(owner, list | tuple):
                    leaves += [t for t in owner if isinstance(t, Tensor)]
                elif hasattr(owner, "_capture_state"):  # Python state a live call changes (a GradScaler's scale)
                    stateful.append(owner)
            elif ins.kind == "r" and ins.args and hasattr(ins.args[0], "bit_generator"):  # a LiveRng
                generators.append(ins.args[0])
        pos = {id(t): k for k, t in enumerate(inputs)}
        uniq = lambda xs: list({id(x): pos.get(id(x), x) for x in xs}.values())  # noqa: E731
        return {"tensors": uniq(tensors), "leaves": uniq(leaves), "optimizers": uniq(optimizers),
                "generators": uniq(generators), "stateful": uniq(stateful)}  # fmt: skip

    def _take(self) -> dict[str, Any]:
        return {
            "data": [_copy(_DATA.__get__(t)) for t in self.tensors],
            "grads": [
                (g, None if g is None else _copy(_DATA.__get__(g))) for g in (_GRAD.__get__(t) for t in self.leaves)
            ],
            "opt": [_copy_state(o.state) for o in self.optimizers],
            "rng": [copy.deepcopy(g.bit_generator.state) for g in self.generators],
            "py": [o._capture_state() for o in self.stateful],
        }

    def restore(self) -> None:
        b = self.before
        for t, a in zip(self.tensors, b["data"], strict=True):
            _DATA.__get__(t)[...] = a
        for t, (g, a) in zip(self.leaves, b["grads"], strict=True):
            if g is not None:
                _DATA.__get__(g)[...] = a
            _GRAD.__set__(t, g)
        for o, st in zip(self.optimizers, b["opt"], strict=True):
            o.state = _copy_state(st)
        for g, st in zip(self.generators, b["rng"], strict=True):
            g.bit_generator.state = st
        for o, st in zip(self.stateful, b["py"], strict=True):
            o._capture_restore(st)

    def take(self) -> dict[str, Any]:
        return self._take()

    def arrays(self) -> list[Any]:
        """The arrays of the tensors the program reads from outside (where it runs)."""
        return [_DATA.__get__(t) for t in self.tensors]

    def differences(self, one: dict[str, Any], other: dict[str, Any], close: bool = False) -> str | None:
        """The first thing that differs between two states taken after a run, in words; ``close``: floating
        tensors may differ as reordered sums make them (see the module doc)."""
        b0 = self.before

        def same(a: Any, b: Any, was: Any) -> bool:
            if _bits_equal(a, b):
                return True
            self.inexact += close
            return close and _close(a, b, was)

        for t, a, b, was in zip(self.tensors, one["data"], other["data"], b0["data"], strict=True):
            if not same(a, b, was):
                return f"the values of a tensor of shape {tuple(t.shape)} (a parameter or buffer)"
        for t, (_, a), (_, b), (_, was) in zip(self.leaves, one["grads"], other["grads"], b0["grads"], strict=True):
            if (a is None) != (b is None) or (a is not None and not same(a, b, was)):
                return f"the .grad of a tensor of shape {tuple(t.shape)}"
        for x, y, was in zip(one["opt"], other["opt"], b0["opt"], strict=True):
            if not _state_equal(x, y, was, same):
                return "the optimizer's state"
        for x, y in zip(one["rng"], other["rng"], strict=True):
            if x != y:
                return "the random number generator's state"
        for o, x, y in zip(self.stateful, one["py"], other["py"], strict=True):
            if x[0] != y[0]:
                return f"the state of a {type(o).__name__}"
        return None


def _copy_state(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _copy_state(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_copy_state(v) for v in x]
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, Tensor):
        return _copy(x)
    return x


def _state_equal(x: Any, y: Any, was: Any = None, same: Callable[[Any, Any, Any], bool] | None = None) -> bool:
    """Optimizer states equal (arrays by ``same(a, b, before)``, bit for bit by default)."""
    at = lambda k: was.get(k) if isinstance(was, dict) else None  # noqa: E731
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(_state_equal(x[k], y[k], at(k), same) for k in x)
    if isinstance(x, list):
        w = was if isinstance(was, list) and len(was) == len(x) else [None] * len(x)
        return (
            isinstance(y, list)
            and len(x) == len(y)
            and all(_state_equal(a, b, c, same) for a, b, c in zip(x, y, w, strict=True))
        )
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, Tensor):
        return same(x, y, was) if same is not None else _bits_equal(x, y)
    return bool(x == y) or x is y


def same_outputs(
    a: Any, b: Any, unwrap: Callable[[Any], Any] = lambda t: _DATA.__get__(t), close: bool = False
) -> bool:
    """Whether two results of the function are identical (tensors bit for bit, other values equal; ``close``:
    floating tensors within the rounding of reordered sums)."""
    if isinstance(a, Tensor):
        if not isinstance(b, Tensor):
            return False
        x, y = unwrap(a), unwrap(b)
        return _bits_equal(x, y) or (close and _close(x, y))
    if isinstance(a, list | tuple):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(same_outputs(x, y, unwrap, close) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_outputs(a[k], b[k], unwrap, close) for k in a)
    if isinstance(a, float) and isinstance(b, float) and a != a:
        return b != b
    return bool(a == b)
