"""The NumPy row kernels split over threads (``_kernels_fused``, GELU's blocks): the same bits on 3 threads as on
one (tiny parts, odd sizes, strided inputs), the reference formulas' values, float64 gradchecks and torch parity
through the operators, ``ember.compile`` capture and replay, a forked child, and the thread setting."""

import multiprocessing
import threading
import time
import types

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.backends import _kernels_activation as ka
from ember.backends import _kernels_fused as fu
from ember.backends import _kernels_threads as kt
from ember.backends.numpy_backend import NumpyBackend
from ember.testing import check_op, torch_or_none

torch = torch_or_none()
BE = NumpyBackend()
REF = NumpyBackend()
numpy_only = pytest.mark.skipif(ember.zeros(1)._backend.name != "numpy", reason="the NumPy backend's kernels")
REF.xp = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})  # the xp path


def _split(monkeypatch, threads):
    """``threads`` kernel threads and tiny parts, so that every row kernel really splits its rows."""
    monkeypatch.setattr(kt, "kernel_threads", lambda: threads)
    monkeypatch.setattr(kt, "_MIN_ROWS_PART", 4)
    monkeypatch.setattr(ka, "_BLOCK", 16)
    monkeypatch.setattr(fu, "_LN_BLOCK", 24)  # layer norm's blocks of rows: 1-2 rows of the shapes below


@pytest.fixture
def split(monkeypatch):
    _split(monkeypatch, 3)


def _strided(a):
    """``a``'s values in a non-contiguous view."""
    b = np.empty((*a.shape[:-1], 2 * a.shape[-1]), a.dtype)[..., ::2]
    b[...] = a
    return b


def _results(be, dtype, strided):
    rng = np.random.default_rng(5)

    def r(*shape):
        a = (rng.standard_normal(shape) * 2).astype(dtype)
        return _strided(a) if strided else a

    res = []
    for shape in ((7, 13), (3, 5, 11)):
        x, g = r(*shape), r(*shape)
        n = shape[-1]
        w, b = r(n), r(n)
        if dtype == np.float32:
            y, d = be.gelu(x, "none", True)
            res += [y, d, be.gelu(x, "none")[0], be.gelu_backward(g, x, "none"), be.gelu_backward(g, x, "none", d)]
        for wb in ((w, b), (None, None), (w, None)):
            y, saved = be.layer_norm(x, (n,), *wb, 1e-5)
            res += [
                y,
                *saved,
                *(a for a in be.layer_norm_backward(g, x, (n,), saved, wb[0], (True,) * 3) if a is not None),
            ]
        ls = be.log_softmax(x, -1)
        res += [ls, be.log_softmax_backward(g, ls, -1)]
    q, k, v = r(5, 2, 7, 3), r(5, 2, 6, 3), r(5, 2, 6, 4)
    keep = rng.random((5, 2, 7, 6)) > 0.3
    bool_mask = rng.random((7, 6)) > 0.2
    for kk, vv, mask, causal, kp in (
        (k, v, None, False, None),
        (k, v, None, True, None),
        (k[:1], v[:1], bool_mask, False, None),  # keys/values broadcast along the batch
        (k, v, r(2, 7, 6), True, keep),  # a float mask over the heads, causal, dropout
    ):
        out, saved = be.attention(q, kk, vv, mask, causal, 0.4, kp, 0.3 if kp is not None else 0.0)
        g = r(*out.shape)
        res += [
            out,
            saved[0],
            *be.attention_backward(g, q, kk, vv, saved, 0.4, 0.3 if kp is not None else 0.0, (True,) * 4),
        ]
    return res


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("whole", [False, True], ids=["products_in_parts", "products_whole"])
def test_split_rows_give_the_bits_of_one_thread(monkeypatch, dtype, strided, whole):
    _split(monkeypatch, 1)
    one = _results(BE, dtype, strided)
    _split(monkeypatch, 3)
    if whole:  # attention's products as for large matrices: whole batch, between the parts
        monkeypatch.setattr(fu, "_BLAS_ONE_THREAD_MNK", 0)
    calls = []
    split = kt._split
    monkeypatch.setattr(kt, "_split", lambda *a: (calls.append(a[2]), split(*a)))
    three = _results(BE, dtype, strided)
    assert len(three) == len(one) and max(calls) == 3  # the rows were really split in three
    for a, b in zip(three, one, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_split_rows_equal_the_reference_formulas(split, dtype):
    fused = _results(BE, dtype, False)
    ref = _results(REF, dtype, False)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for a, b in zip(fused, ref, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_probabilities_are_the_transposed_scores_memory_and_serve_the_reference_backward(causal):
    """The NumPy kernel keeps the probabilities in the memory of the transposed scores (keys along axis -2) and
    hands out their view in the usual shape: the values of the reference formula, and a backward that gets
    them in another dtype's company (the reference path, reading the strided view) gives the fused gradients."""
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal(s) for s in ((3, 2, 9, 5), (3, 2, 11, 5), (3, 2, 11, 4)))
    out, saved = BE.attention(q, k, v, None, causal, 0.3, None, 0.0)
    rout, rsaved = REF.attention(q, k, v, None, causal, 0.3, None, 0.0)
    probs = saved[0]
    assert probs.shape == (3, 2, 9, 11) and np.swapaxes(probs, -1, -2).flags.c_contiguous
    np.testing.assert_allclose(probs, rsaved[0], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(out, rout, rtol=1e-12, atol=1e-14)
    if causal:  # key j > query i is never attended: exactly zero
        assert not np.triu(probs[0, 0], 1).any()
    g = rng.standard_normal(out.shape)
    fused = BE.attention_backward(g, q, k, v, saved, 0.3, 0.0, (True,) * 4)
    ref = REF.attention_backward(g, q, k, v, saved, 0.3, 0.0, (True,) * 4)  # the xp formulas on the view
    via_g32 = BE.attention_backward(g.astype(np.float32), q, k, v, saved, 0.3, 0.0, (True,) * 4)  # not fused
    for a, b, c in zip(fused, ref, via_g32, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(c, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mask_shape", [(), (11,), (9, 1), (2, 9, 11)])
def test_attention_additive_masks_of_fewer_dims_in_the_transposed_kernel(mask_shape):
    """A float mask of fewer dims than the scores (0-d, a row over the keys, a column over the queries, per head)
    broadcasts in the transposed layout as in the usual one: the reference formulas' values and gradients."""
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal(s) for s in ((3, 2, 9, 5), (3, 2, 11, 5), (3, 2, 11, 4)))
    mask = rng.standard_normal(mask_shape)
    out, saved = BE.attention(q, k, v, mask, False, 0.3, None, 0.0)
    rout, rsaved = REF.attention(q, k, v, mask, False, 0.3, None, 0.0)
    np.testing.assert_allclose(out, rout, rtol=1e-12, atol=1e-14)
    g = rng.standard_normal(out.shape)
    fused = BE.attention_backward(g, q, k, v, saved, 0.3, 0.0, (True,) * 4)
    ref = REF.attention_backward(g, q, k, v, rsaved, 0.3, 0.0, (True,) * 4)
    for a, b in zip(fused, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_blocks_of_rows_give_the_bits_of_whole_rows(monkeypatch, dtype):
    """Layer norm's chains run block by block of rows (``_LN_BLOCK``): blocks of one row and of all rows give
    the same bits, with and without weight and bias."""
    rng = np.random.default_rng(3)
    x, g = (rng.standard_normal((33, 17)).astype(dtype) for _ in range(2))
    w, b = (rng.standard_normal(17).astype(dtype) for _ in range(2))
    res = []
    for block in (1, 1 << 20):
        monkeypatch.setattr(fu, "_LN_BLOCK", block)
        out = []
        for wb in ((w, b), (None, None)):
            y, mean, rstd = fu.layer_norm(x, 17, *wb, 1e-5)
            out += [y, mean, rstd]
            out += [a for a in fu.layer_norm_backward(g, x, 17, mean, rstd, wb[0], True, True, True) if a is not None]
        res.append(out)
    for a, c in zip(*res, strict=True):
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_kernels_keep_their_accuracy_far_from_zero(dtype):
    """Rows whose mean is 1e4 times their spread: the variance is that of the centred rows, and backward works
    from ``x - mean`` (no cancellation of ``x * c1 + c0``): within float32's rounding of the float64 results."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 96)) + 1e4
    g, w, b = rng.standard_normal((64, 96)), rng.standard_normal(96), rng.standard_normal(96)
    ref = REF.layer_norm(x, (96,), w, b, 1e-5)
    gref = REF.layer_norm_backward(g, x, (96,), ref[1], w, (True, True, True))
    cast = [a.astype(dtype) for a in (x, g, w, b)]
    y, (mean, rstd) = BE.layer_norm(cast[0], (96,), cast[2], cast[3], 1e-5)
    grads = BE.layer_norm_backward(cast[1], cast[0], (96,), (mean, rstd), cast[2], (True, True, True))
    # float32 holds 1e4 + x to 1e-3 absolute: the normalised values carry that error (1e-3 of a unit spread)
    tol = 5e-3 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(y, ref[0], rtol=tol, atol=tol)
    for a, r in zip(grads, gref, strict=True):
        np.testing.assert_allclose(a, r, rtol=tol, atol=tol * np.abs(r).max())


@pytest.mark.parametrize("shape", [(2048, 128), (7, 100), (150, 64), (30, 2000)])
def test_column_sums_in_chunks_equal_numpy_sums(shape):
    """Layer norm's sums over rows: chunks of rows as matrix-vector products (a remainder of rows, fewer rows than a
    chunk, long rows through NumPy's own sum), equal to float64 sums within float32 rounding."""
    a = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    s = fu._column_sums(a)
    assert s.dtype == np.float32 and s.shape == (shape[1],)
    np.testing.assert_allclose(s, a.astype(np.float64).sum(0), rtol=0, atol=2e-6 * shape[0])
    np.testing.assert_array_equal(fu._column_sums(a.astype(np.float64)), fu._column_sums(a.astype(np.float64)))


def _rand(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape)


@numpy_only
def test_ops_gradcheck_and_torch_parity_when_split(split):
    tf = None if torch is None else torch.nn.functional
    check_op(lambda x, w, b: F.layer_norm(x, (5,), w, b), _rand(9, 5), _rand(5), _rand(5),
             torch_fn=tf and (lambda x, w, b: tf.layer_norm(x, (5,), w, b)), name="layer_norm_split")  # fmt: skip
    check_op(lambda x: F.log_softmax(x, -1), _rand(7, 6), torch_fn=tf and (lambda x: tf.log_softmax(x, -1)),
             name="log_softmax_split")  # fmt: skip
    check_op(lambda x: F.gelu(x), _rand(5, 7), torch_fn=tf and (lambda x: tf.gelu(x)), name="gelu_split")
    sdpa = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    tsdpa = tf and (lambda q, k, v: tf.scaled_dot_product_attention(q, k, v, is_causal=True))
    check_op(sdpa, _rand(5, 2, 4, 3), _rand(5, 2, 4, 3), _rand(5, 2, 4, 2), torch_fn=tsdpa, name="sdpa_split")


def _gpt_like(seed):
    ember.manual_seed(seed)
    model = ember.nn.ModuleDict(
        {"ln": ember.nn.LayerNorm(8), "fc": ember.nn.Linear(8, 16), "out": ember.nn.Linear(16, 8)}
    )
    return model, ember.optim.AdamW(model.parameters(), lr=1e-2)


def _step(model, opt, x, y):
    opt.zero_grad()
    h = model["ln"](x)
    q = h.reshape(6, 2, 5, 4)
    a = F.scaled_dot_product_attention(q, q, q, is_causal=True).reshape(6, 5, 8)
    logits = model["out"](F.gelu(model["fc"](a + h)))
    loss = F.cross_entropy(logits.reshape(-1, 8), y.reshape(-1))
    loss.backward()
    opt.step()
    return loss


@numpy_only
def test_compile_records_split_kernels_whole_and_replays_them_on_threads(split, monkeypatch):
    eager_model, eager_opt = _gpt_like(0)
    model, opt = _gpt_like(0)
    step = ember.compile(lambda x, y: _step(model, opt, x, y))
    pools = []
    get_pool = kt._get_pool
    monkeypatch.setattr(kt, "_get_pool", lambda n: (pools.append(n), get_pool(n))[1])
    for i in range(4):
        x = ember.tensor(_rand(6, 5, 8).astype(np.float32) * (i + 1))
        y = ember.tensor(np.random.default_rng(i).integers(0, 8, (6, 5)))
        if i == 3:
            pools.clear()
        got = step(x, y)
        want = _step(eager_model, eager_opt, x, y)
        assert got.detach().numpy().tobytes() == want.detach().numpy().tobytes()
    assert step.stats["replays"] >= 1 and pools  # the last call replayed, with the rows on the pool
    for (name, p), q in zip(model.named_parameters(), eager_model.parameters(), strict=True):
        assert p.detach().numpy().tobytes() == q.detach().numpy().tobytes(), name


def _child(q):
    x = np.random.default_rng(1).standard_normal((64, 32)).astype(np.float32)
    y = BE.layer_norm(x, (32,), None, None, 1e-5)[0]
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    q.put(bool(np.allclose(y, want, atol=1e-5)))


def test_a_forked_child_runs_split_kernels(split):
    x = np.ones((64, 32), np.float32)
    BE.layer_norm(x, (32,), None, None, 1e-5)  # the parent's pool exists (its threads are not in the child)
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    p.join(60)
    assert p.exitcode == 0 and q.get(timeout=5) is True


def test_thread_setting(monkeypatch):
    for var in ("EMBER_KERNEL_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(ember._threads, "_num_threads", None)
    assert kt.kernel_threads() == min(len(__import__("os").sched_getaffinity(0)), 8)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert kt.kernel_threads() == 1  # compare.py --threads 1
    monkeypatch.setattr(ember._threads, "_num_threads", 2)
    assert kt.kernel_threads() == 2  # ember.set_num_threads wins over the environment
    monkeypatch.setenv("EMBER_KERNEL_THREADS", "3")
    assert kt.kernel_threads() == 3 and kt._opt_in_threads() == 3
    monkeypatch.delenv("EMBER_KERNEL_THREADS")
    assert kt._opt_in_threads() == 1  # convolution and pooling splits stay opt-in
    calls = []
    monkeypatch.setattr(kt, "_split", lambda *a: calls.append(a))
    kt.parallel_rows(100, 2 * kt._MIN_ROWS_PART - 1, lambda lo, hi: calls.append((lo, hi)))
    assert calls == [(0, 100)]  # below two parts' worth: on the calling thread


class _LatePool:
    """A pool whose tasks start only when the test says (a pool thread that gets a core late)."""

    def __init__(self):
        self.tasks = []

    def submit(self, fn):
        self.tasks.append(fn)


def test_a_split_waits_for_taken_ranges_only(monkeypatch):
    pool = _LatePool()
    monkeypatch.setattr(kt, "_get_pool", lambda n: pool)
    seen = []
    kt._split(3, 10, 3, lambda lo, hi: seen.append((lo, hi)), 4)  # returns: nothing waits for the late helpers
    assert sorted(seen) == [(10 * i // 10, 10 * (i + 1) // 10) for i in range(10)] and len(pool.tasks) == 2
    for task in pool.tasks:  # they start after the call and find every range taken
        task()
    assert len(seen) == 10


def test_a_split_raises_a_ranges_error_after_all_ranges(monkeypatch):
    pool = _LatePool()
    monkeypatch.setattr(kt, "_get_pool", lambda n: pool)
    seen = []

    def fn(lo, hi):
        seen.append(lo)
        if lo == 3:
            raise ValueError("range 3")

    with pytest.raises(ValueError, match="range 3"):
        kt._split(2, 6, 2, fn, 3)
    assert sorted(seen) == list(range(6))  # the other ranges still ran (they write disjoint results)


def test_the_pool_thread_runs_the_newest_task_it_was_handed_and_survives_an_error():
    """``_Crew``: a thread busy with a task runs, once free, the last task handed to it (an earlier one not yet
    started is dropped: a split's caller takes every range no thread took); a task's error leaves the thread."""
    crew = kt._Crew(1)
    started, gate, failed, ran = threading.Event(), threading.Event(), threading.Event(), []

    def first():
        started.set()
        gate.wait(10)
        ran.append(1)

    def fails():
        failed.set()
        raise ValueError("task")

    crew.submit(first)
    assert started.wait(10)
    crew.submit(lambda: ran.append(2))
    crew.submit(fails)  # the thread is still busy: replaces the task above
    gate.set()
    assert failed.wait(10)
    crew.submit(lambda: ran.append(3))
    for _ in range(1000):
        if len(ran) == 2:
            break
        time.sleep(0.01)
    assert ran == [1, 3]
    crew.shutdown()
