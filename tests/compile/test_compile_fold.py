"""Constant folding in ``ember.compile`` (``_compile/_fold.py``): calls made of constants run once, at build time.

Each test compares the compiled function with eager over several calls, bit for bit, and checks which calls
were folded by building the program again with folding off.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ember
import ember._compile._program as program
from ember.backends import _kernels_pool

from .test_compile_steps import _batches

NUMPY = ember.zeros(1)._backend.name == "numpy"  # the tests' tensors' backend (not the CPU's: the fake-device run)


def _bits(t: Any) -> bytes:
    return np.ascontiguousarray(t.detach().numpy()).tobytes()


def _calls(fn: Callable[..., Any], *args: Any, fold: bool = True) -> int:
    """How many calls the program of ``fn`` makes, built with folding on or off."""
    real = program.fold
    if not fold:
        program.fold = lambda tr, order, outputs, arrays=(): (set(), {})
    try:
        c = ember.compile(fn)
        c(*args)
        return c.cache[0].program.n_instrs
    finally:
        program.fold = real


def _same_as_eager(fn: Callable[..., Any], xs: list[Any], before: Callable[[int], None] = lambda i: None) -> Any:
    c = ember.compile(fn)
    for i, x in enumerate(xs):
        before(i)
        assert _bits(c(x)) == _bits(fn(x)), f"call {i}"
    assert c.stats["replays"] == len(xs) - 2 and c.stats["eager"] == 0
    return c


def test_a_chain_of_constants_is_computed_once() -> None:
    def f(x: Any) -> Any:
        w = (ember.arange(1000, dtype=ember.float32) * 0.002).exp()
        return (x * w).sum()

    _same_as_eager(f, [ember.randn(1000) for _ in range(5)])
    if NUMPY:
        x = ember.randn(1000)
        assert _calls(f, x) == 2 < _calls(f, x, fold=False)  # (x * w).sum(): arange, multiply, exp folded


def test_a_number_written_into_a_selection_on_an_accelerator_is_made_there(monkeypatch: Any) -> None:
    """``c[0] = 7.0`` on torch-CUDA: torch's own setitem lifts the number into a host tensor and copies it to the
    device (a copy from pageable memory, which a CUDA graph cannot capture: the fold test's compiled function got
    no CUDA graph). On an accelerator Ember makes the number a 0-d array on the device (``aten::full``), with the
    values of torch's own write. Checked on torch-CPU taking the accelerator's path."""
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode

    class Calls(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            self.names.append(func._schema.name)
            return func(*args, **(kwargs or {}))

    be = ember.backends.get("torch", "cpu")
    monkeypatch.setattr(be, "_cheap_sync", False)
    for dtype in ("float16", "float32", "int32", "bool"):
        with ember.backends.use("torch"), ember.device(be.device):
            e = ember.zeros(5, dtype=getattr(ember, dtype))
            with Calls() as calls:
                e[0], e[1:3], e[3] = 7.1, 2, True
        t = torch.zeros(5, dtype=getattr(torch, dtype))
        t[0], t[1:3], t[3] = 7.1, 2, True
        assert "aten::lift_fresh" not in calls.names and calls.names.count("aten::full") == 3, calls.names
        assert e.tolist() == t.tolist()


def test_a_constant_written_in_place_is_not_folded() -> None:
    """``c`` is made of constants but written after ``d`` reads it: ``e`` must see the write (a fold that ignored
    in-place writes would compute ``e`` from the zeros)."""

    def f(x: Any) -> Any:
        c = ember.zeros(5)
        d = c + 1.0
        c[0] = 7.0
        c[2:4].fill_(3.0)  # a write through a view
        e = c * 2.0
        return x + d + e

    _same_as_eager(f, [ember.randn(5) for _ in range(4)])
    x = ember.zeros(5)
    c = ember.compile(f)
    assert [c(x).tolist() for _ in range(3)][-1] == [15.0, 1.0, 7.0, 7.0, 1.0]  # the third call is a replay
    assert c.stats["replays"] == 1
    if NUMPY:
        assert _calls(f, x) == _calls(f, x, fold=False)


@pytest.mark.skipif(not NUMPY, reason="the arrays of from_numpy are the NumPy backend's own")
def test_outside_arrays_fold_only_when_nobody_can_write_them() -> None:
    arr = np.ones(4, np.float32)
    frozen = np.arange(4, dtype=np.float32)
    frozen.flags.writeable = False
    x = ember.randn(4)

    def change(i: int) -> None:
        arr[:] = i

    for data in (lambda: arr, lambda: np.broadcast_to(arr, (4,))):  # writeable; a read-only view of writeable memory

        def f(x: Any, data: Any = data) -> Any:
            return x + ember.from_numpy(data()) * 2.0

        _same_as_eager(f, [x] * 5, change)
        assert _calls(f, x) == _calls(f, x, fold=False)

    def g(x: Any) -> Any:
        return x + ember.from_numpy(frozen) * 2.0

    _same_as_eager(g, [ember.randn(4) for _ in range(4)])
    assert _calls(g, x) == _calls(g, x, fold=False) - 1


@pytest.mark.skipif(not NUMPY, reason="the pooling positions are the NumPy backend's")
def test_lenet_pool_positions_fold_and_training_matches_eager() -> None:
    """The 2x2 max pools' window corners, computed in the recorded call when the backend's cache is cold, fold;
    compiled training steps (Adam, dropout) stay equal to eager bit for bit."""
    from .test_compile_steps import _LeNetDropout, _state_bits

    m1 = _LeNetDropout()
    m2 = copy.deepcopy(m1)
    o1, o2 = ember.optim.Adam(m1.parameters(), lr=1e-3), ember.optim.Adam(m2.parameters(), lr=1e-3)

    def make(m: Any, o: Any) -> Callable[..., Any]:
        def step(x: Any, y: Any) -> Any:
            o.zero_grad()
            loss = ember.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            o.step()
            return loss

        return step

    eager, compiled = make(m1, o1), ember.compile(make(m2, o2))
    batch = _batches((4, 1, 12, 12), 10)
    gen = ember.default_generator
    for i in range(6):
        _kernels_pool._corners_cache.clear()  # (the capture, at i = 0, computes the corners)
        state = gen.get_state()
        l2 = compiled(*batch(i))
        gen.set_state(state)
        l1 = eager(*batch(i))
        assert _bits(l1) == _bits(l2) and _state_bits(m1, o1) == _state_bits(m2, o2), f"step {i}"
    assert compiled.stats["replays"] == 4
    _kernels_pool._corners_cache.clear()
    folded = _calls(make(m2, o2), *batch(0))
    _kernels_pool._corners_cache.clear()
    assert folded <= _calls(make(m2, o2), *batch(0), fold=False) - 10
