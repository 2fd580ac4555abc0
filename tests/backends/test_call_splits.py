"""Work split by batch ranges, one long NumPy call a range (``_kernels_threads.parallel_calls``): the im2col columns
(``_kernels_conv._copy_batch``). It must give the bits of one thread (odd batches, strided sources, float64, empty),
really split when the work is large enough and the threads allow it, stay whole on one thread, be recorded by
``ember.compile`` as one call that its replays split again, and leave no arrays held by the pool threads."""

import gc
import weakref

import numpy as np
import pytest

import ember
import ember.backends._kernels_conv as kc
import ember.backends._kernels_threads as kt
from ember.backends.numpy_backend import NumpyBackend
from ember.testing import torch_or_none

torch = torch_or_none()
BE = NumpyBackend()
numpy_only = pytest.mark.skipif(ember.zeros(1)._backend.name != "numpy", reason="the NumPy backend's kernels")
rng = np.random.default_rng(5)


@pytest.fixture
def spy(monkeypatch):
    """Three kernel threads, tiny parts; returns the list of (n, parts) of every split made."""
    seen: list[tuple[int, int]] = []
    real = kt._split

    def split(threads, n, parts, fn, chunks=1):
        seen.append((n, parts))
        real(threads, n, parts, fn, chunks)

    monkeypatch.setattr(kt, "_split", split)
    monkeypatch.setattr(kt, "kernel_threads", lambda: 3)
    monkeypatch.setattr(kt, "_MIN_CALL_PART", 4)
    return seen


@pytest.mark.parametrize("shape,axis", [((1, 5, 5, 65, 7, 6), 3), ((3, 2, 9, 4), 2), ((4, 0, 3), 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_copy_batch_equals_one_copy(spy, monkeypatch, shape, axis, dtype):
    src = rng.standard_normal(shape[::-1]).astype(dtype).T  # a strided source
    out = np.full(shape, np.nan, dtype)
    assert kc._copy_batch(src, axis, out) is out
    np.testing.assert_array_equal(out, src)
    if src.size:
        assert spy[-1] == (shape[axis], min(3, shape[axis]))
    monkeypatch.setattr(kt, "kernel_threads", lambda: 1)
    out[...] = np.nan
    kc._copy_batch(src, axis, out)
    np.testing.assert_array_equal(out, src)
    if src.size:
        assert spy[-1] == (shape[axis], 1)  # asked, but one part: whole on the calling thread
    monkeypatch.setattr(kt, "_MIN_CALL_PART", 1 << 30)
    spy.clear()
    kc._copy_batch(src, axis, out)
    assert spy == []  # too little work: no split at all


@numpy_only
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 7, 64])
def test_first_lenet_layer_split_equals_one_thread_and_torch(monkeypatch, dtype, n):
    monkeypatch.setattr(kt, "kernel_threads", lambda: 1)
    r = np.random.default_rng(n)
    x0, w0, b0 = r.standard_normal((n, 1, 28, 28)), r.standard_normal((6, 1, 5, 5)), r.standard_normal(6)
    g0 = r.standard_normal((n, 6, 24, 24))

    def run():
        x, w, b = (ember.tensor(v.astype(dtype), requires_grad=True) for v in (x0, w0, b0))
        y = ember.nn.functional.conv2d(x, w, b)
        y.backward(ember.tensor(g0.astype(dtype)))
        return [t.detach().numpy().copy() for t in (y, x.grad, w.grad, b.grad)]

    one = run()
    monkeypatch.setattr(kt, "kernel_threads", lambda: 2)
    monkeypatch.setattr(kt, "_MIN_CALL_PART", 64)
    seen = []
    real = kt._split
    monkeypatch.setattr(kt, "_split", lambda *a: seen.append(a[1:3]) or real(*a))
    for a, b in zip(run(), one, strict=True):
        np.testing.assert_array_equal(a, b)
    if n > 1:  # the columns split (once: the backward reuses them)
        assert seen.count((n, 2)) == 1
    if torch is not None:
        tx, tw, tb = (torch.tensor(v.astype(dtype), requires_grad=True) for v in (x0, w0, b0))
        ty = torch.nn.functional.conv2d(tx, tw, tb)
        ty.backward(torch.tensor(g0.astype(dtype)))
        tol = 1e-4 if dtype == "float32" else 1e-10
        for a, b in zip(one, (ty, tx.grad, tw.grad, tb.grad), strict=True):
            np.testing.assert_allclose(a, b.detach().numpy(), rtol=tol, atol=tol)


@numpy_only
def test_compiled_replay_splits_and_equals_eager(monkeypatch):
    monkeypatch.setattr(kt, "kernel_threads", lambda: 2)
    from ember.models import LeNet5Config

    def make():
        ember.manual_seed(0)
        m = LeNet5Config().init()
        opt = ember.optim.SGD(m.parameters(), lr=0.05)
        return m, opt

    r = np.random.default_rng(1)
    xs = [ember.tensor(r.standard_normal((64, 1, 28, 28)).astype(np.float32)) for _ in range(4)]
    ys = [ember.tensor(r.integers(0, 10, 64)) for _ in range(4)]

    def step_of(m, opt):
        def step(x, y):
            opt.zero_grad()
            loss = ember.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    me, oe = make()
    mc, oc = make()
    eager, compiled = step_of(me, oe), ember.compile(step_of(mc, oc))
    for i in range(2):  # capture, checked replay
        compiled(xs[i], ys[i])
        eager(xs[i], ys[i])
    seen = []
    real = kt._split
    monkeypatch.setattr(kt, "_split", lambda *a: seen.append(a[1:3]) or real(*a))
    for i in range(2, 4):
        np.testing.assert_array_equal(compiled(xs[i], ys[i]).detach().numpy(), eager(xs[i], ys[i]).detach().numpy())
    for pe, pc in zip(me.parameters(), mc.parameters(), strict=True):
        np.testing.assert_array_equal(pe.detach().numpy(), pc.detach().numpy())
    assert seen.count((64, 2)) == 4  # the columns, once a step, in eager and in the replays


def test_pool_threads_do_not_keep_a_finished_splits_arrays(monkeypatch):
    monkeypatch.setattr(kt, "_get_pool", lambda workers: kt._Crew(workers))  # a crew of its own
    a = np.zeros(64)
    ref = weakref.ref(a)

    def fn(lo: int, hi: int, arr: np.ndarray = a) -> None:  # (a default, not a cell that ``del a`` empties)
        arr[lo:hi] += 1

    kt._split(3, 64, 3, fn, 2)
    assert a.sum() == 64  # every element once
    del a, fn
    gc.collect()
    assert ref() is None  # the crew's threads hold the split's task, not what it used

    def bad(lo: int, hi: int) -> None:
        raise ValueError(f"range {lo}")

    with pytest.raises(ValueError, match="range"):  # raised again on the calling thread
        kt._split(2, 4, 2, bad, 1)
