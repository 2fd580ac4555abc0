"""The reference recurrent cell kernels on NumPy (``backends/_kernels_rnn.py``) against the LSTM step's closed form
computed here in float64: every output and gradient, with and without biases, one input feature (the broadcast
product) and several, inputs of any layout (transposed and strided views), either output's gradient missing,
an empty batch, float32 and float64; and the weight and bias gradients of the GRU and Elman cells."""

import warnings

import numpy as np
import pytest

from ember import backends

BE = backends.get("numpy")
N, H = 7, 5


def _sig(a):
    return 1.0 / (1.0 + np.exp(-a))


def _lstm_reference(x, h, c, w_ih, w_hh, b, gh, gc):
    """``(h', c', gx, gh, gc, gw_ih, gw_hh, gb)`` of one LSTM step, in float64."""
    x, h, c, w_ih, w_hh = (np.asarray(a, dtype=np.float64) for a in (x, h, c, w_ih, w_hh))
    z = x @ w_ih.T + h @ w_hh.T + (0.0 if b is None else b.astype(np.float64))
    i, f, g, o = np.split(z, 4, axis=1)
    i, f, g, o = _sig(i), _sig(f), np.tanh(g), _sig(o)
    c1 = f * c + i * g
    tc = np.tanh(c1)
    gh = np.zeros_like(tc) if gh is None else np.asarray(gh, dtype=np.float64)
    gc = np.zeros_like(tc) if gc is None else np.asarray(gc, dtype=np.float64)
    dc = gh * o * (1 - tc * tc) + gc
    dz = np.concatenate([dc * g * i * (1 - i), dc * c * f * (1 - f), dc * i * (1 - g * g), gh * tc * o * (1 - o)], 1)
    return o * tc, c1, dz @ w_ih, dz @ w_hh, dc * f, dz.T @ x, dz.T @ h, dz.sum(0)


def _layouts(a, how):
    """``a`` with the same values in another memory layout."""
    if how == "F":
        return np.asfortranarray(a)
    if how == "strided":  # every other column of a wider array
        wide = np.zeros((a.shape[0], 2 * a.shape[1]), dtype=a.dtype)
        wide[:, ::2] = a
        return wide[:, ::2]
    return a


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("features", [1, 6])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("grads", ["both", "h", "c", "none"])
def test_lstm_cell_matches_the_closed_form(grads, bias, features, dtype, layout):
    rs = np.random.RandomState(7)
    x, h, c = (rs.randn(N, s).astype(dtype) for s in (features, H, H))
    w_ih, w_hh = (0.5 * rs.randn(4 * H, features)).astype(dtype), (0.5 * rs.randn(4 * H, H)).astype(dtype)
    b_ih, b_hh = (rs.randn(4 * H).astype(dtype) for _ in range(2)) if bias else (None, None)
    gh = rs.randn(N, H).astype(dtype) if grads in ("both", "h") else None
    gc = rs.randn(N, H).astype(dtype) if grads in ("both", "c") else None
    x, h, c = (_layouts(a, layout) for a in (x, h, c))
    gh, gc = (None if a is None else _layouts(a, layout) for a in (gh, gc))
    h1, c1, saved = BE.lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh)
    got = BE.lstm_cell_backward(gh, gc, saved, x, h, c, w_ih, w_hh, (True,) * 7)
    b = None if b_ih is None else b_ih.astype(np.float64) + b_hh
    want = _lstm_reference(x, h, c, w_ih, w_hh, b, gh, gc)
    tol = 2e-5 if dtype == "float32" else 1e-12
    for k, (g, w) in enumerate(zip([h1, c1, *got], [*want, want[7]], strict=True)):
        assert g.dtype == np.dtype(dtype) and g.shape == w.shape, k
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"output {k}")
    assert got[5] is not got[6]  # two gradients, two arrays (each may be written in place)


def test_lstm_cell_needs_and_empty_batch():
    rs = np.random.RandomState(1)
    x, h, c = rs.randn(N, 3), rs.randn(N, H), rs.randn(N, H)
    w_ih, w_hh, b_ih, b_hh = rs.randn(4 * H, 3), rs.randn(4 * H, H), rs.randn(4 * H), rs.randn(4 * H)
    _, _, saved = BE.lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh)
    gh = rs.randn(N, H)
    full = BE.lstm_cell_backward(gh, None, saved, x, h, c, w_ih, w_hh, (True,) * 7)
    for k in range(7):
        need = tuple(j != k for j in range(7))
        part = BE.lstm_cell_backward(gh, None, saved, x, h, c, w_ih, w_hh, need)
        assert part[k] is None
        for j in range(7):
            if j != k:
                np.testing.assert_array_equal(part[j], full[j])
    e = np.zeros((0, H))
    h1, c1, saved = BE.lstm_cell(np.zeros((0, 3)), e, e, w_ih, w_hh, b_ih, b_hh)
    assert h1.shape == c1.shape == (0, H)
    got = BE.lstm_cell_backward(e, e, saved, np.zeros((0, 3)), e, e, w_ih, w_hh, (True,) * 7)
    assert [g.shape for g in got] == [(0, 3), (0, H), (0, H), (4 * H, 3), (4 * H, H), (4 * H,), (4 * H,)]
    assert all(not g.any() for g in got[3:])


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_weight_and_bias_gradient_pieces(dtype, layout):
    """``dz^T x`` as the transposed product ``(x^T dz)^T`` and the bias sum as a product with ones (float16: a
    plain sum), on gradients of any layout; and an Elman cell's gradients end to end."""
    rs = np.random.RandomState(2)
    dz, x = _layouts(rs.randn(N, 3 * H).astype(dtype), layout), _layouts(rs.randn(N, 4).astype(dtype), layout)
    tol = 1e-2 if dtype == "float16" else (1e-5 if dtype == "float32" else 1e-13)
    gw, gb = BE.weight_grad(dz, x), BE._bias_grad(dz)
    assert gw.dtype == gb.dtype == np.dtype(dtype) and gw.shape == (3 * H, 4) and gb.shape == (3 * H,)
    d64, x64 = dz.astype(np.float64), x.astype(np.float64)
    np.testing.assert_allclose(gw, d64.T @ x64, rtol=tol, atol=tol)
    np.testing.assert_allclose(gb, d64.sum(0), rtol=tol, atol=tol)
    assert BE._bias_grad(np.zeros((0, 3), dtype)).tolist() == [0, 0, 0]
    h, w_ih, w_hh, b_ih, b_hh = rs.randn(N, H), rs.randn(H, 4), rs.randn(H, H), rs.randn(H), rs.randn(H)
    gh, x = rs.randn(N, H), x.astype(np.float64)
    h1, _ = BE.rnn_cell(x, h, w_ih, w_hh, b_ih, b_hh, "tanh")
    got = BE.rnn_cell_backward(gh, h1, x, h, w_ih, w_hh, "tanh", (True,) * 6)
    d = gh * (1 - np.tanh(x @ w_ih.T + h @ w_hh.T + b_ih + b_hh) ** 2)
    for g, w in zip(got, [d @ w_ih, d @ w_hh, d.T @ x, d.T @ h, d.sum(0), d.sum(0)], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    assert got[4] is not got[5]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_saturated_activations_without_warnings(dtype):
    """Pre-activations of +-1e4 (``exp`` overflows there): the cells' and layers' activations are their limits,
    finite, and NumPy warns of nothing (the overflow to ``inf`` is expected: ``1 / (1 + inf)`` is 0)."""
    rs = np.random.RandomState(5)
    x, h, c = (1e4 * rs.randn(N, H)).astype(dtype), rs.randn(N, H).astype(dtype), rs.randn(N, H).astype(dtype)
    w = {g: np.eye(g * H, H, dtype=dtype) - np.eye(g * H, H, k=-H, dtype=dtype) for g in (1, 3, 4)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h1, c1, saved = BE.lstm_cell(x, h, c, w[4], w[4], None, None)
        grads = BE.lstm_cell_backward(h, c, saved, x, h, c, w[4], w[4], (True,) * 7)
        g1, _ = BE.gru_cell(x, h, w[3], w[3], None, None)
        r1, _ = BE.rnn_cell(x, h, w[1], w[1], None, None, "tanh")
        out, *_ = BE.lstm_layer(x[None], h, c, w[4], w[4], None, None, None, False)
        gout, *_ = BE.gru_layer(x[None], h, w[3], w[3], None, None, False)
    with np.errstate(over="ignore"):
        want = _lstm_reference(x, h, c, w[4], w[4], None, h, c)
    tol = 1e-4 if dtype == "float32" else 1e-12
    for got, ref in zip([h1, c1, *grads], [*want, want[7]], strict=True):
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * max(1.0, np.abs(ref).max()))
    for a in (g1, r1, out, gout):
        assert np.isfinite(a).all() and np.abs(a).max() <= 1e4
    np.testing.assert_array_equal(out[0], h1)


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batch", [97, 98, 150])
def test_products_cut_in_halves_for_small_gemm_kernels(monkeypatch, batch, dtype, layout):
    """Where the BLAS has small-matrix kernels (``_small_gemm``, set here on any machine), a product of up to
    twice their size runs as two halves: the rows of ``dz w``, the inner dimension of ``dz^T x`` (a sum). Same
    values as one product, and through a whole LSTM step the closed form's."""
    monkeypatch.setattr(BE, "_small_gemm", 1e6)
    rs = np.random.RandomState(batch)
    hs = 51
    dz = _layouts(rs.randn(batch, 4 * hs).astype(dtype), layout)
    w, x = rs.randn(4 * hs, hs).astype(dtype), _layouts(rs.randn(batch, hs).astype(dtype), layout)
    expect_cut = 1e6 < batch * 4 * hs * hs <= 2e6
    assert bool(BE._halves(batch, 4 * hs, hs, dz.dtype)) == expect_cut
    tol = 1e-4 if dtype == "float32" else 1e-12
    d64 = dz.astype(np.float64)
    x64 = x.astype(np.float64)
    prods = ((BE._mm(dz, w), d64 @ w), (BE.weight_grad(dz, x), d64.T @ x), (BE._mm_t(x, w), x64 @ w.T))
    for got, want in prods:
        assert got.dtype == np.dtype(dtype) and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    h, c, gh, gc = (rs.randn(batch, hs).astype(dtype) for _ in range(4))
    w_ih, w_hh = (0.2 * rs.randn(4 * hs, hs)).astype(dtype), (0.2 * rs.randn(4 * hs, hs)).astype(dtype)
    h1, c1, saved = BE.lstm_cell(x, h, c, w_ih, w_hh, None, None)  # (the forward's h w^T cut too)
    got = BE.lstm_cell_backward(gh, gc, saved, x, h, c, w_ih, w_hh, (True,) * 7)
    want = _lstm_reference(x, h, c, w_ih, w_hh, None, gh, gc)
    for g, w_ in zip([h1, c1, *got], [*want, want[-1]], strict=True):
        np.testing.assert_allclose(g, w_, rtol=tol, atol=tol * max(1.0, np.abs(w_).max()))
    monkeypatch.setattr(BE, "_small_gemm", 0.0)
    assert not BE._halves(batch, 4 * hs, hs, dz.dtype)


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(("batch", "features"), [(0, 1), (7, 6), (97, 1), (97, 51), (150, 51), (200, 51)])
def test_lstm_cell_gate_major_products(monkeypatch, batch, features, bias, dtype, layout):
    """Where each gate's product runs on the BLAS's small-matrix kernels (``_small_gemm``, set here on any
    machine), the cell's ``-(z + b)`` (cell gate doubled) comes gate-major from one product per gate of
    ``[h | x | 1]`` (``_lstm_gate_major``): its values, and the whole step's against the closed form, for inputs
    and weights of any layout. Batch 200 at 51 features is over the kernels' size: the (N, 4H) path."""
    monkeypatch.setattr(BE, "_small_gemm", 1e6)
    rs = np.random.RandomState(batch + features)
    hs = 51
    x, h, c, gh, gc = (_layouts(rs.randn(batch, s).astype(dtype), layout) for s in (features, hs, hs, hs, hs))
    w_ih = _layouts((0.2 * rs.randn(4 * hs, features)).astype(dtype), layout)
    w_hh = _layouts((0.2 * rs.randn(4 * hs, hs)).astype(dtype), layout)
    b_ih, b_hh = (rs.randn(4 * hs).astype(dtype) for _ in range(2)) if bias else (None, None)
    tol = 1e-4 if dtype == "float32" else 1e-12
    act = BE._lstm_gate_major(x, h, w_ih, w_hh, b_ih, b_hh)
    assert (act is None) == (batch * hs * (hs + features + bias) > 1e6)
    if act is not None:
        z = x.astype(np.float64) @ w_ih.T.astype(np.float64) + h.astype(np.float64) @ w_hh.T.astype(np.float64)
        z += 0.0 if b_ih is None else b_ih.astype(np.float64) + b_hh
        want = -z.reshape(batch, 4, hs).transpose(1, 0, 2) * np.array([1.0, 1.0, 2.0, 1.0]).reshape(4, 1, 1)
        assert act.dtype == np.dtype(dtype) and act.shape == (4, batch, hs) and act.flags.c_contiguous
        np.testing.assert_allclose(act, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max(initial=0.0)))
    h1, c1, saved = BE.lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh)
    grads = BE.lstm_cell_backward(gh, gc, saved, x, h, c, w_ih, w_hh, (True,) * 5 + (bias, bias))
    ref = _lstm_reference(x, h, c, w_ih, w_hh, None if b_ih is None else b_ih + b_hh, gh, gc)
    for g, w_ in zip([h1, c1, *grads], [*ref, ref[-1]] if bias else [*ref[:-1], None, None], strict=True):
        if w_ is None:
            assert g is None
            continue
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_allclose(g, w_, rtol=tol, atol=tol * max(1.0, np.abs(w_).max(initial=0.0)))
    monkeypatch.setattr(BE, "_small_gemm", 0.0)
    assert BE._lstm_gate_major(x, h, w_ih, w_hh, b_ih, b_hh) is None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tanh_either_way(dtype):
    """The NumPy backend's ``_tanh_to`` (NumPy's own ``tanh`` where it has SIMD loops: ``_TANH_SIMD``) and the
    reference's ``2 sigmoid(2a) - 1`` agree with ``tanh`` in float64, into another array and in place, with
    saturated arguments and no warning."""
    from ember.backends._kernels_rnn_pieces import RNNPieces

    a = np.concatenate([np.linspace(-30, 30, 601), [-1e4, 1e4, 0.0, -0.0, 1e-8]]).astype(dtype).reshape(2, 303)
    want = np.tanh(a.astype(np.float64))
    tol = 4e-7 if dtype == "float32" else 1e-15
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for fn in (BE._tanh_to, lambda a, out: RNNPieces._tanh_to(BE, a, out)):
            out = np.empty_like(a)
            assert fn(a, out) is out and out.dtype == a.dtype
            np.testing.assert_allclose(out, want, rtol=0, atol=tol)
            b = a.copy()
            fn(b, b)
            np.testing.assert_array_equal(b, out)
