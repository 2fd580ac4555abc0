"""The first replay of a program is checked against eager, bit for bit, before it is trusted.

On the call after a capture the program runs, what it changed is kept, the state is put back, and the step runs
eagerly; the two results and the two states must be identical (outputs, every tensor the step read from outside,
the gradients, the optimizers' state, the generators). The caller gets eager's result either way. A difference
means the recording missed something (a computation NumPy could not show us): the function then stays eager.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from .._tensor import Tensor
from ._instr import _DATA, _GRAD, _Opaque
from ._tracer import Tracer

__all__ = ["Snapshot", "same_outputs"]


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

    def differences(self, one: dict[str, Any], other: dict[str, Any]) -> str | None:
        """The first thing that differs between two states taken after a run, in words."""
        for t, a, b in zip(self.tensors, one["data"], other["data"], strict=True):
            if not _bits_equal(a, b):
                return f"the values of a tensor of shape {tuple(t.shape)} (a parameter or buffer)"
        for t, (_, a), (_, b) in zip(self.leaves, one["grads"], other["grads"], strict=True):
            if (a is None) != (b is None) or (a is not None and not _bits_equal(a, b)):
                return f"the .grad of a tensor of shape {tuple(t.shape)}"
        for x, y in zip(one["opt"], other["opt"], strict=True):
            if not _state_equal(x, y):
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


def _state_equal(x: Any, y: Any) -> bool:
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(_state_equal(x[k], y[k]) for k in x)
    if isinstance(x, list):
        return isinstance(y, list) and len(x) == len(y) and all(_state_equal(a, b) for a, b in zip(x, y, strict=True))
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, Tensor):
        return _bits_equal(x, y)
    return bool(x == y) or x is y


def same_outputs(a: Any, b: Any, unwrap: Callable[[Any], Any] = lambda t: _DATA.__get__(t)) -> bool:
    """Whether two results of the function are identical (tensors bit for bit, other values equal)."""
    if isinstance(a, Tensor):
        return isinstance(b, Tensor) and _bits_equal(unwrap(a), unwrap(b))
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(same_outputs(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_outputs(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and a != a:
        return b != b
    return bool(a == b)
