"""The CuPy recorder (``_compile/_cupy_trace.py``) on the CPU: no CuPy here, so a stand-in array class (a Python
class wrapping NumPy arrays, as ``cupy.ndarray`` is a Python class over CuPy's extension type) and a stand-in
module take its swaps. What this checks: the swapped operators, methods, properties, module functions and ufunc
methods are recorded through ``Tracer.call`` with the arrays known by identity, the program replays on fresh
inputs as the eager code computes, host reads and data-dependent shapes are reported, and everything is put back.
CuPy's own behaviour under the swaps is not checked here (that needs a GPU: ``make test-cuda``)."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

from ember._compile import _cupy_trace
from ember._compile._instr import Ref
from ember._compile._program import build
from ember._compile._tracer import Tracer
from ember.autograd._capture import CAPTURE


def _np(x: Any) -> Any:
    return x.a if isinstance(x, FakeArray) else x


class FakeArray:
    """Enough of ``cupy.ndarray`` for the recorder: operators, indexing, methods, a property, host reads."""

    __slots__ = ("a",)

    def __init__(self, a: Any) -> None:
        self.a = np.asarray(a)

    shape = property(lambda self: self.a.shape)
    dtype = property(lambda self: self.a.dtype)
    strides = property(lambda self: self.a.strides)
    T = property(lambda self: FakeArray(self.a.T))

    @property
    def data(self) -> Any:  # CuPy's MemoryPointer: ``data.mem.ptr`` is the allocation
        base = self.a
        while isinstance(base.base, np.ndarray):
            base = base.base
        return types.SimpleNamespace(mem=types.SimpleNamespace(ptr=base.__array_interface__["data"][0]))

    def __len__(self) -> int:
        return len(self.a)

    def __add__(self, o: Any) -> FakeArray:
        return FakeArray(self.a + _np(o))

    def __radd__(self, o: Any) -> FakeArray:
        return FakeArray(_np(o) + self.a)

    def __mul__(self, o: Any) -> FakeArray:
        return FakeArray(self.a * _np(o))

    def __rmul__(self, o: Any) -> FakeArray:
        return FakeArray(_np(o) * self.a)

    def __iadd__(self, o: Any) -> FakeArray:
        self.a += _np(o)
        return self

    def __gt__(self, o: Any) -> FakeArray:
        return FakeArray(self.a > _np(o))

    def __getitem__(self, i: Any) -> FakeArray:
        return FakeArray(self.a[_np(i)])

    def __setitem__(self, i: Any, v: Any) -> None:
        self.a[_np(i)] = _np(v)

    def __bool__(self) -> bool:
        return bool(self.a)

    def item(self) -> Any:
        return self.a.item()

    def sum(self, axis: Any = None) -> FakeArray:
        return FakeArray(self.a.sum(axis))

    def reshape(self, *shape: Any) -> FakeArray:
        return FakeArray(self.a.reshape(*shape))

    def nonzero(self) -> Any:
        return tuple(FakeArray(i) for i in self.a.nonzero())


class FakeUfunc:
    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __call__(self, *args: Any) -> FakeArray:
        return FakeArray(self.fn(*map(_np, args)))

    def at(self, a: Any, index: Any, v: Any) -> None:
        self.fn.at(a.a, _np(index), _np(v))


def _module() -> Any:
    m = types.ModuleType("fakecupy")
    m.exp = FakeUfunc(np.exp)  # type: ignore[attr-defined]
    m.add = FakeUfunc(np.add)  # type: ignore[attr-defined]
    m.zeros = lambda shape, dtype=float: FakeArray(np.zeros(shape, dtype))  # type: ignore[attr-defined]
    m.nonzero = lambda a: a.nonzero()  # type: ignore[attr-defined]
    m.shape = lambda a: a.shape  # type: ignore[attr-defined]  # static: never recorded
    return m


def _step(xp: Any, x: Any, w: Any, idx: Any) -> Any:
    y = xp.exp(x) * w + 1.0  # a ufunc, operators
    z = 2.0 * y.T.reshape(-1)  # a reflected operator, a property, a method
    t = xp.zeros((4,))  # a creation: a replay makes a fresh one
    xp.add.at(t, idx, 1.0)  # a ufunc method writing its first argument
    t += z.sum()  # in place
    t[1:3] = z[:2]  # a write through an index
    return t + z[::-1] * 1.5, xp.shape(t)


def _record(fn: Any, *arrays: Any) -> tuple[Tracer, Any, list[int]]:
    saved: list[tuple[Any, str, Any, bool]] = []

    def swap(owner: Any, name: str, value: Any) -> None:
        saved.append((owner, name, vars(owner).get(name), name in vars(owner)))
        setattr(owner, name, value)

    xp = _module()
    _cupy_trace._patch_module(xp, swap, FakeUfunc)
    _cupy_trace._patch_array(FakeArray, swap)
    tr = Tracer()
    tr.array_types = (FakeArray,)
    inputs = [tr.tknown[id(tr.input(a))] for a in arrays]
    CAPTURE.tracer = tr
    try:
        out = fn(xp, *arrays)
    finally:
        CAPTURE.tracer = None
        for owner, name, prev, had in reversed(saved):
            setattr(owner, name, prev) if had else delattr(owner, name)
    return tr, out, inputs


def test_recorded_calls_replay_on_fresh_inputs_as_eager() -> None:
    rng = np.random.default_rng(0)
    idx = FakeArray(np.array([0, 3, 3]))
    x, w = FakeArray(rng.standard_normal((2, 2))), FakeArray(rng.standard_normal((2, 2)))
    tr, (out, shape), inputs = _record(lambda xp, x, w: _step(xp, x, w, idx), x, w)
    assert tr.problem is None and shape == (4,)
    assert "__add__" not in vars(FakeArray) or vars(FakeArray)["__add__"] is FakeArray.__dict__["__add__"]
    program = build(tr, Ref(tr.tknown[id(out)]), inputs)
    names = [getattr(ins.fn, "__name__", "") for ins in tr.instrs]
    assert "<lambda>" in names and "at" in names and "shape" not in names and program.n_instrs == len(names)
    for seed in (1, 2):
        r = np.random.default_rng(seed)
        x2, w2 = FakeArray(r.standard_normal((2, 2))), FakeArray(r.standard_normal((2, 2)))
        got = program.run(types.SimpleNamespace(_data=x2), types.SimpleNamespace(_data=w2))
        want, _ = _step(_module(), x2, w2, idx)
        assert got.a.tobytes() == want.a.tobytes()


def test_swaps_are_put_back() -> None:
    before = dict(vars(FakeArray))
    _record(lambda xp, x: x + 1.0, FakeArray(np.ones(2)))
    assert dict(vars(FakeArray)) == before


def test_a_host_read_in_user_code_and_a_data_dependent_shape_are_refused() -> None:
    tr, _, _ = _record(lambda xp, x: bool(x.sum() > 0), FakeArray(np.ones(2)))
    assert tr.problem is not None and "read on the host" in tr.problem[0]
    tr, _, _ = _record(lambda xp, x: xp.nonzero(x), FakeArray(np.ones(2)))
    assert tr.problem is not None and "nonzero: a result whose shape depends on the values" in tr.problem[0]


def test_without_cupy_nothing_is_swapped(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "cupy", None)
    assert _cupy_trace.install(lambda *a: pytest.fail("swapped")) is False


def test_a_python_value_from_a_recorded_call_is_a_host_read() -> None:
    xp = _module()
    xp.count = lambda a: int(a.a.size)  # type: ignore[attr-defined]  # a function answering with a Python value
    saved: list[Any] = []
    _cupy_trace._patch_module(xp, lambda o, n, v: (saved.append((o, n, getattr(o, n))), setattr(o, n, v)), FakeUfunc)
    tr = Tracer()
    tr.array_types = (FakeArray,)
    x = FakeArray(np.ones(3))
    tr.input(x)
    CAPTURE.tracer = tr
    try:
        n = xp.count(x)
    finally:
        CAPTURE.tracer = None
        for o, name, v in saved:
            setattr(o, name, v)
    assert n == 3 and tr.problem is not None and "Python value computed from arrays" in tr.problem[0]
