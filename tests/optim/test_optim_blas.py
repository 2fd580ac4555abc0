"""The NumPy backend's level-1 routes of the optimizer kernels (``backends/_kernels_optim.py``): SciPy's BLAS,
NumPy's own OpenBLAS by ctypes (the route of a NumPy-only install) and NumPy's in-place operations agree, on odd
sizes, both float dtypes, non-contiguous, overlapping, read-only and empty arrays."""

import numpy as np
import pytest

import ember
from ember import nn, optim
from ember.backends import _kernels_optim as ko
from ember.backends import get

ROUTES = ["numpy-blas", "scipy", "numpy-ops"]


def _route(monkeypatch, name):
    """Force one route (skip when this installation lacks it)."""
    if name == "numpy-blas":
        if ko._numpy_blas() is None:
            pytest.skip("NumPy's BLAS has no ILP64 OpenBLAS CBLAS symbols")
        monkeypatch.setattr(ko, "_scipy_blas", lambda: None)
    elif name == "scipy":
        if ko._scipy_blas() is None:
            pytest.skip("SciPy (with threadpoolctl) not installed")
        monkeypatch.setattr(ko, "_numpy_blas", lambda: None)
    else:
        monkeypatch.setattr(ko, "_blas", lambda *args, **kwargs: None)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_axpy_and_scal_on_every_route(route, dtype, monkeypatch):
    _route(monkeypatch, route)
    be = get("numpy", "cpu")
    rng = np.random.default_rng(1)
    n = 70_001  # odd, over OpenBLAS's threading threshold for axpy
    y0, x0 = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    tol = {"rtol": 1e-6, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-13, "atol": 1e-13}
    y = y0.copy()
    be.axpy(y, -0.37, x0)
    np.testing.assert_allclose(y, y0 + dtype(-0.37) * x0, **tol)
    be.scal(y, 0.9)
    np.testing.assert_allclose(y, (y0 + dtype(-0.37) * x0) * dtype(0.9), **tol)
    # a non-contiguous x (a transposed gradient) and 2-d arrays
    y2, x2 = y0[:70_000].reshape(350, 200).copy(), x0[:70_000].reshape(200, 350)
    want = y2 + dtype(2.5) * x2.T
    be.axpy(y2, 2.5, x2.T)
    np.testing.assert_allclose(y2, want, **tol)
    # x overlapping y (shifted by one element): read before written, as NumPy's ``y += a * x``
    buf = y0.copy()
    yv, xv = buf[1:], buf[:-1]
    want = yv + dtype(0.5) * xv
    be.axpy(yv, 0.5, xv)
    np.testing.assert_allclose(yv, want, **tol)
    # x is y
    y3 = y0.copy()
    be.axpy(y3, 1.0, y3)
    np.testing.assert_allclose(y3, 2 * y0, **tol)
    # empty
    e = np.zeros(0, dtype)
    be.axpy(e, 1.0, e)
    be.scal(e, 2.0)
    # read-only y: refused, as NumPy's in-place operation refuses it
    ro = y0.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        be.axpy(ro, 1.0, x0)
    with pytest.raises(ValueError):
        be.scal(ro, 2.0)


def test_the_routes_agree_bit_for_bit_where_both_blas_are_there():
    """NumPy's OpenBLAS and SciPy's run the same level-1 kernels: the same bits (SGD with momentum, Adam)."""
    if ko._numpy_blas() is None or ko._scipy_blas() is None:
        pytest.skip("needs both NumPy's ILP64 OpenBLAS and SciPy")
    rng = np.random.default_rng(2)
    y0, x0 = rng.standard_normal(100_003).astype(np.float32), rng.standard_normal(100_003).astype(np.float32)
    outs = []
    for fns in (ko._numpy_blas()["f"], (lambda y, a, x: ko._BLAS.saxpy(x, y, a=a), lambda y, a: ko._BLAS.sscal(a, y))):
        y = y0.copy()
        fns[0](y, np.float32(-0.013), x0)
        fns[1](y, 0.9)
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])


def _train(name, opts, dtype):
    """Five steps of a model with a large odd-sized weight (the BLAS routes) and a small bias."""
    rng = np.random.default_rng(3)
    m = nn.Linear(301, 233).to(dtype)
    with ember.no_grad():
        m.weight.copy_(ember.tensor(rng.standard_normal((233, 301)) * 0.05, dtype=dtype))
        m.bias.copy_(ember.tensor(rng.standard_normal(233), dtype=dtype))
    opt = getattr(optim, name)(m.parameters(), **opts)
    for _ in range(5):
        x = ember.tensor(rng.standard_normal((16, 301)), dtype=dtype)
        opt.zero_grad()
        (m(x) ** 2).mean().backward()
        opt.step()
    return [p.detach().numpy().copy() for p in m.parameters()]


@pytest.mark.parametrize(
    "name,opts",
    [
        ("SGD", {"lr": 0.1}),
        ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
        ("Adam", {"lr": 0.01}),
        ("AdamW", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    ],
)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_optimizers_agree_across_routes(name, opts, dtype, monkeypatch):
    if ember.backends.current("cpu") != "numpy":
        pytest.skip("the NumPy backend's kernels")
    got = {}
    for route in ROUTES:
        with monkeypatch.context() as mp:
            try:
                _route(mp, route)
            except pytest.skip.Exception:
                continue
            got[route] = _train(name, opts, dtype)
    tol = 1e-5 if dtype is ember.float32 else 1e-12
    ref = got.pop("numpy-ops")
    for route, ps in got.items():
        for a, b in zip(ps, ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=route)


def _steps(kind, opts, shape, dtype, transposed_grad=False):
    """Four steps of the NumPy backend's SGD or Adam kernel on one parameter; returns every array it updates."""
    be = get("numpy", "cpu")
    rng = np.random.default_rng(4)
    p = rng.standard_normal(shape).astype(dtype)
    state = [None] if kind == "sgd" else [np.zeros_like(p), np.zeros_like(p), np.zeros_like(p), np.empty_like(p)]
    for k in range(1, 5):
        g = rng.standard_normal(shape[::-1] if transposed_grad else shape).astype(dtype)
        g = g.T if transposed_grad else g
        if kind == "sgd":
            state[0] = be.sgd_step(p, g, state[0], 0.05, *opts)
        else:
            m, v, max_v, tmp = state
            be.adam_step(p, g, m, v, max_v if opts[-1] else None, tmp, k, 0.01, 0.9, 0.999, 1e-8, *opts[:2])
    return [p] + [a for a in state if a is not None]


@pytest.mark.parametrize(
    "kind,opts",
    [
        ("sgd", (0.0, 0.9, 0.0, False)),  # (weight_decay, momentum, dampening, nesterov)
        ("sgd", (0.01, 0.9, 0.1, True)),
        ("sgd", (0.01, 0.0, 0.0, False)),
        ("adam", (0.0, False, False)),  # (weight_decay, decoupled, amsgrad)
        ("adam", (0.1, False, True)),
        ("adam", (0.1, True, False)),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,transposed", [((2 * 65536 + 4099,), False), ((389, 521), False), ((389, 521), True)])
def test_blocked_steps_are_bit_identical(kind, opts, dtype, shape, transposed, monkeypatch):
    """A large parameter's step runs in blocks of ``_BLOCK`` elements (each block's passes stay in cache): the
    same bits as the step on whole arrays, on every BLAS route; a transposed gradient is stepped whole."""
    for route in ROUTES:
        with monkeypatch.context() as mp:
            try:
                _route(mp, route)
            except pytest.skip.Exception:
                continue
            mp.setattr(ko, "threads", lambda: 1)  # (NumPy's own BLAS on several threads: never blocked)
            if route != "numpy-ops":
                assert ko._blocks(np.zeros(shape, dtype), np.zeros(shape, dtype)) is not None
            blocked = _steps(kind, opts, shape, dtype, transposed)
            mp.setattr(ko, "_BLOCK", 1 << 40)
            whole = _steps(kind, opts, shape, dtype, transposed)
        for a, b in zip(blocked, whole, strict=True):
            np.testing.assert_array_equal(a, b, err_msg=route)


def test_which_route_a_vector_takes(monkeypatch):
    """SciPy's single-threaded BLAS first; a long vector (from ``_SPLIT_AXPY_PAYS`` elements, where OpenBLAS's split
    paid) takes NumPy's own OpenBLAS when that runs on several threads, except in a blocked step; a short one (LeNet-5's
    48,000-element weight), or one thread, stays with SciPy."""
    own, scipy = ko._numpy_blas(), ko._scipy_blas()
    if own is None or scipy is None:
        pytest.skip("needs both NumPy's ILP64 OpenBLAS and SciPy")
    long, short = np.zeros(ko._SPLIT_AXPY_PAYS, np.float32), np.zeros(ko._SPLIT_AXPY_PAYS - 1, np.float32)
    monkeypatch.setattr(ko, "threads", lambda: 2)
    assert ko._blas(long) is own["f"]
    assert ko._blas(long, threaded=False) is not own["f"]
    assert ko._blas(short) is not own["f"]
    monkeypatch.setattr(ko, "threads", lambda: 1)
    assert ko._blas(long) is not own["f"]
    monkeypatch.setattr(ko, "_scipy_blas", lambda: None)
    assert ko._blas(short) is own["f"] and ko._blas(np.zeros(4)) is own["d"]
    assert ko._blas(long[::2]) is None  # not contiguous


def test_threaded_steps_run_one_after_another(monkeypatch):
    """A backend whose steps use the cores themselves (``threaded_steps``: NumPy's) is not put on the optimizer's
    thread pool; one without it is, with the same results."""
    import ember.optim.optimizer as om

    if om._POOL_SIZE < 2:
        pytest.skip("one CPU: no pool")
    be = get("numpy", "cpu")
    used = []
    real_pool = om._pool
    monkeypatch.setattr(om, "_PARALLEL_MIN", 0)
    monkeypatch.setattr(om, "_pool", lambda: used.append(1) or real_pool())

    def run():
        rng = np.random.default_rng(5)
        ps = [
            nn.Param(ember.tensor(rng.standard_normal(s), dtype=ember.float32, device=be)) for s in [(300, 500), (7,)]
        ]
        opt = optim.Adam(ps, lr=0.01)
        for _ in range(3):
            for p in ps:
                p.grad = ember.tensor(rng.standard_normal(p.shape), dtype=ember.float32, device=be)
            opt.step()
        return [p.detach().numpy().copy() for p in ps]

    assert be.threaded_steps
    serial = run()
    assert not used
    monkeypatch.setattr(be, "threaded_steps", False, raising=False)
    pooled = run()
    assert used
    for a, b in zip(serial, pooled, strict=True):
        np.testing.assert_array_equal(a, b)


def test_no_blocks_on_numpy_blas_threads(monkeypatch):
    """Without SciPy and with NumPy's BLAS on several threads, steps take whole arrays (each pass split over the
    threads); with one thread, blocks."""
    if ko._numpy_blas() is None:
        pytest.skip("NumPy's BLAS has no ILP64 OpenBLAS CBLAS symbols")
    monkeypatch.setattr(ko, "_scipy_blas", lambda: None)
    a, b = np.zeros(3 * ko._BLOCK, np.float32), np.zeros(3 * ko._BLOCK, np.float32)
    monkeypatch.setattr(ko, "threads", lambda: 2)
    assert ko._blocks(a, b) is None
    monkeypatch.setattr(ko, "threads", lambda: 1)
    assert ko._blocks(a, b) is not None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 7, 10_000, 10_001, 32_284])
def test_dot_on_one_blas_thread(n, dtype, monkeypatch):
    """``dot`` (L-BFGS's inner products): the value of the sum, and past OpenBLAS's split (``_SPLIT_DOT``) the
    same bits whether NumPy's OpenBLAS runs on one thread or two (it then runs on one); NumPy's thread count is
    back as it was after each call."""
    from ember.backends import _blas_threads as bt

    be = get("numpy", "cpu")
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    want = float(np.sum(a.astype(np.float64) * b))
    got = be.dot(a, b)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    assert got.dtype == dtype and abs(float(got) - want) <= tol * max(1.0, float(np.abs(a) @ np.abs(b)))
    fns = bt._controls()
    if not fns:
        pytest.skip("NumPy's OpenBLAS thread controls not found")
    get_n, set_n = fns
    before = int(get_n())
    try:
        bits = []
        for t in (1, 2):
            set_n(t)
            monkeypatch.setattr(ko, "threads", lambda t=t: t)
            bits.append(be.dot(a, b).tobytes())
            assert int(get_n()) == t
        if n > ko._SPLIT_DOT:
            assert bits[0] == bits[1]
    finally:
        set_n(before)
