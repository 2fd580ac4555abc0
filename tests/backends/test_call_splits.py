"""Work split by batch ranges, one long NumPy call a range (``_kernels_threads.parallel_calls``): the im2col columns
(``_kernels_conv._copy_batch``) and batches of small products (``_blas_threads._batch_matmul``). Each must give the
bits of one thread (odd batches, strided operands, float64, complex, empty), really split when the work is large
enough and the threads allow it, stay whole on one thread, and be recorded by ``ember.compile`` as one call that
its replays split again."""

import gc
import weakref

import numpy as np
import pytest

import ember
import ember.backends._blas_threads as bt
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


def _operands(dtype, batch, m, k, n, a2d, strided):
    a = rng.standard_normal((m, k) if a2d else (batch, m, k))
    b = rng.standard_normal((k, batch, n)).transpose(1, 0, 2) if strided else rng.standard_normal((batch, k, n))
    if np.dtype(dtype).kind == "c":
        a, b = a + 1j * rng.standard_normal(a.shape), b + 1j * rng.standard_normal(b.shape)
    return a.astype(dtype), b.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("batch", [2, 7, 65])
@pytest.mark.parametrize("a2d", [True, False])
@pytest.mark.parametrize("strided", [True, False])
def test_batch_matmul_equals_one_call(spy, dtype, batch, a2d, strided):
    a, b = _operands(dtype, batch, 6, 25, 9, a2d, strided)
    want = np.matmul(a, b)
    got = bt._batch_matmul(a, b)
    np.testing.assert_array_equal(got, want)
    assert spy and spy[-1] == (batch, min(3, batch))
    out = np.full_like(want, np.nan)
    assert bt._batch_matmul(a, b, out=out) is out
    np.testing.assert_array_equal(out, want)


def test_batch_matmul_whole_on_one_thread_or_small_work(spy, monkeypatch):
    a, b = _operands(np.float32, 8, 3, 4, 5, False, False)
    monkeypatch.setattr(kt, "kernel_threads", lambda: 1)
    np.testing.assert_array_equal(bt._batch_matmul(a, b), np.matmul(a, b))
    assert spy[-1] == (8, 1)  # asked, but one part: run whole on the calling thread
    monkeypatch.setattr(kt, "kernel_threads", lambda: 3)
    monkeypatch.setattr(kt, "_MIN_CALL_PART", 1 << 20)
    spy.clear()
    np.testing.assert_array_equal(bt._batch_matmul(a, b), np.matmul(a, b))
    assert spy == []  # too little work: no split at all
    empty = np.zeros((0, 3, 4), np.float32)
    assert bt._batch_matmul(empty, np.zeros((0, 4, 5), np.float32)).shape == (0, 3, 5)


@numpy_only
def test_matmul_sends_batches_of_small_products_to_the_split(monkeypatch):
    calls = []
    real = bt._batch_matmul
    monkeypatch.setattr(bt, "_batch_matmul", lambda a, b, out=None: calls.append(b.shape) or real(a, b, out))
    if not bt._controls():
        pytest.skip("NumPy's BLAS here is not an OpenBLAS whose thread count can be set")
    w = rng.standard_normal((6, 25)).astype(np.float32)
    cols = rng.standard_normal((25, 64, 576)).astype(np.float32).transpose(1, 0, 2)  # LeNet-5's first layer
    np.testing.assert_array_equal(bt.matmul(w, cols), np.matmul(w, cols))
    assert calls == [(64, 25, 576)]
    calls.clear()
    bt.matmul(w, cols[:8])  # 8 * 86K multiply-adds: under _BATCH_MACS
    big = rng.standard_normal((4, 300, 300)).astype(np.float32)  # 2.7e7 a matrix: OpenBLAS's own split
    bt.matmul(big, big)
    bt.matmul(w, cols[0])  # one matrix
    assert calls == []


@pytest.mark.parametrize("shape,axis", [((1, 5, 5, 65, 7, 6), 3), ((3, 2, 9, 4), 2), ((4, 0, 3), 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_copy_batch_equals_one_copy(spy, shape, axis, dtype):
    src = rng.standard_normal(shape[::-1]).astype(dtype).T  # a strided source
    out = np.full(shape, np.nan, dtype)
    assert kc._copy_batch(src, axis, out) is out
    np.testing.assert_array_equal(out, src)
    if src.size:
        assert spy[-1] == (shape[axis], min(3, shape[axis]))


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
    monkeypatch.setattr(bt, "_BATCH_MACS", 1)
    seen = []
    real = kt._split
    monkeypatch.setattr(kt, "_split", lambda *a: seen.append(a[1:3]) or real(*a))
    for a, b in zip(run(), one, strict=True):
        np.testing.assert_array_equal(a, b)
    if n > 1 and bt._controls():  # the columns and both per-entry products split
        assert sum(1 for s in seen if s == (n, 2)) >= 3
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
    assert seen.count((64, 2)) >= 6  # the columns and two products a step, in eager and in the replays


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
