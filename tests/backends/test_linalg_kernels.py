"""The decomposition kernels on every backend, at the sizes the NumPy backend sends to SciPy's single-precision LAPACK
(float32/complex64 matrices with both sides >= 32; smaller ones and float64 go to NumPy's batched loop)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.backends import numpy_backend


def _backends() -> list[str]:
    names = ["numpy"]
    try:
        import torch  # noqa: F401

        names.append("torch")
    except ImportError:
        pass
    return names


SHAPES = [(40, 48), (64, 32), (2, 3, 33, 33), (32, 5)]  # last: one side under the SciPy threshold


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.float64])
def test_svd_qr_eigh_kernels_reconstruct_in_the_input_precision(backend, shape, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    a = a.astype(dtype)
    b = ember.backends.get(backend, "cpu")
    x = b.from_numpy(a)
    tol = 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10
    real = np.finfo(dtype).dtype

    def host(v):
        return np.asarray(b.to_numpy(v))

    for full in (False, True):
        u, s, vh = map(host, b.svd(x, full))
        assert u.dtype == dtype and vh.dtype == dtype and s.dtype == real
        k = s.shape[-1]
        rec = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
        np.testing.assert_allclose(rec, a, atol=tol * 10, rtol=0)
        np.testing.assert_allclose(s, np.linalg.svd(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64),
                                                    compute_uv=False), atol=tol * 10, rtol=tol)  # fmt: skip
        q, r = map(host, b.qr(x, full))
        assert q.dtype == dtype and r.dtype == dtype
        assert q.shape[-1] == (a.shape[-2] if full else min(a.shape[-2:]))
        np.testing.assert_allclose(q @ r, a, atol=tol * 10, rtol=0)
        np.testing.assert_allclose(np.triu(r), r)
    h = a[..., : min(a.shape[-2:]), : min(a.shape[-2:])]
    h = h + np.conj(np.swapaxes(h, -1, -2))
    hx = b.from_numpy(np.ascontiguousarray(h))
    for upper in (False, True):
        w, v = map(host, b.eigh(hx, upper))
        assert w.dtype == real and v.dtype == dtype
        assert np.all(np.diff(w, axis=-1) >= 0)
        np.testing.assert_allclose((v * w[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2)), h, atol=tol * 100, rtol=0)


def test_numpy_backend_sends_large_single_precision_matrices_to_scipy(monkeypatch):
    pytest.importorskip("scipy")
    b = ember.backends.get("numpy", "cpu")
    calls = []
    monkeypatch.setattr(numpy_backend, "_each_matrix", lambda a, fn, n: calls.append(a.shape) or tuple(fn(a)))
    b.svd(np.ones((40, 40), np.float32), False)
    b.svd(np.ones((40, 40), np.float64), False)
    b.svd(np.ones((8, 8), np.float32), False)
    assert calls == [(40, 40)]


def test_linalg_ops_on_large_float32_match_torch(torch):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 48, 40)).astype(np.float32)
    ea, ta = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    for fn in (lambda m, lib: lib.linalg.svdvals(m).sum(), lambda m, lib: lib.linalg.qr(m)[1].abs().sum(),
               lambda m, lib: lib.linalg.eigvalsh(m.transpose(-1, -2) @ m).sum()):  # fmt: skip
        ea.grad, ta.grad = None, None
        e_out, t_out = fn(ea, ember), fn(ta, torch)
        e_out.backward()
        t_out.backward()
        np.testing.assert_allclose(e_out.item(), t_out.item(), rtol=1e-4)
        np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("shape", [(1024, 8, 8), (3, 5, 300, 4, 4), (1025, 6, 8), (401, 8, 6)])
def test_numpy_backend_splits_batches_of_small_matrices_over_threads(monkeypatch, threads, shape):
    """The batch split over Ember's threads gives NumPy's unsplit results bit for bit, in the batch's order."""
    from ember import _threads
    from ember.backends._base import Backend

    monkeypatch.setattr(_threads, "_num_threads", threads)
    seen: set[str] = set()
    real = np.linalg.qr

    def qr(a, mode="reduced"):
        import threading

        seen.add(threading.current_thread().name)
        return real(a, mode=mode)

    b = numpy_backend.NumpyBackend()
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    sym = a[..., : min(shape[-2:]), : min(shape[-2:])]
    sym = sym + np.swapaxes(sym, -1, -2)
    for name, x, args in [("svd", a, (False,)), ("svd", a, (True,)), ("qr", a, (False,)), ("qr", a, (True,)),
                          ("eigh", sym, (False,)), ("eigh", sym, (True,))]:  # fmt: skip
        got, want = getattr(b, name)(x, *args), getattr(Backend, name)(b, x, *args)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype and np.array_equal(g, w), (name, args)
    monkeypatch.setattr(np.linalg, "qr", qr)
    for _ in range(50):  # (a kernel thread that wakes after the caller took every part takes none: try again)
        b.qr(a, False)
        if len(seen) >= 2:
            break
    assert len(seen) >= 2 and any(n.startswith("ember-kernel") for n in seen)  # the pool took parts
