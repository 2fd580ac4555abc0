"""``stft``/``istft`` in the check_op registry (gradcheck, forward and backward parity with PyTorch, gradients to the
signal and the window), the window functions (``ember.*_window`` and ``ember.signal.windows``) against PyTorch's in
both dtypes, and the errors."""

import warnings

import numpy as np
import pytest

import ember
from ember.testing import check_op, torch_or_none

rng = np.random.default_rng(31)


def r(*shape):
    return rng.standard_normal(shape)


def c(*shape):
    return r(*shape) + 1j * r(*shape)


def pos(*shape):
    return rng.random(shape) + 0.5  # windows whose squared overlap-add never vanishes


def T():
    return __import__("torch")


def both(label, fn, args, **kw):
    return (label, lambda *a: fn(ember, *a), lambda *a: fn(T(), *a), args, kw)


CASES = [
    both("stft", lambda L, x, w: L.stft(x, 16, 4, window=w, return_complex=True), [r(40), pos(16)]),
    both("stft_batch_win_length", lambda L, x, w: L.stft(x, 16, 5, 12, w, return_complex=True), [r(2, 33), pos(12)]),
    both("stft_no_window", lambda L, x: L.stft(x, 8, 2, center=False, return_complex=True), [r(2, 21)]),
    both("stft_constant_normalized", lambda L, x, w: L.stft(x, 10, 3, window=w, pad_mode="constant",
                                                            normalized=True, return_complex=True), [r(30), pos(10)]),
    both("stft_twosided", lambda L, x, w: L.stft(x, 8, 3, window=w, onesided=False, return_complex=True),
         [r(25), pos(8)]),
    both("stft_complex", lambda L, x, w: L.stft(x, 8, 2, window=w), [c(2, 20), pos(8)]),
    both("stft_real_output", lambda L, x, w: L.stft(x, 8, 2, window=w, return_complex=False), [r(20), pos(8)]),
    both("stft_align", lambda L, x, w: L.stft(x, 16, 3, 12, w, center=False, align_to_window=True,
                                              return_complex=True), [r(2, 40), pos(12)]),
    both("istft", lambda L, s, w: L.istft(s, 12, 3, window=w), [c(7, 9), pos(12)]),
    both("istft_batch_length", lambda L, s, w: L.istft(s, 16, 4, 12, w, length=31), [c(2, 9, 8), pos(12)]),
    both("istft_no_center", lambda L, s, w: L.istft(s, 8, 2, window=w, center=False), [c(5, 7), pos(8)]),
    both("istft_normalized_pad", lambda L, s: L.istft(s, 8, 2, normalized=True, length=40), [c(5, 9)]),
    both("istft_twosided", lambda L, s, w: L.istft(s, 8, 2, window=w, onesided=False), [c(8, 7), pos(8)]),
    both("istft_complex_output", lambda L, s, w: L.istft(s, 8, 2, window=w, onesided=False, return_complex=True),
         [c(8, 7), pos(8)]),
    both("stft_istft_roundtrip", lambda L, x, w: L.istft(L.stft(x, 16, 4, window=w, return_complex=True), 16, 4,
                                                         window=w, length=50), [r(2, 50), pos(16)]),
]  # fmt: skip


@pytest.mark.parametrize("label,fn,torch_fn,args,kw", CASES, ids=[case[0] for case in CASES])
def test_spectral_registry(label, fn, torch_fn, args, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # both libraries warn of rectangular windows, real output
        check_op(fn, *args, torch_fn=torch_fn, name=label, **kw)


def test_stft_then_istft_reconstructs():
    x = ember.tensor(r(3, 100))
    w = ember.hann_window(32, dtype=ember.float64)
    spec = ember.stft(x, 32, 8, window=w, return_complex=True)
    assert spec.shape == (3, 17, 13) and spec.dtype == ember.complex128
    np.testing.assert_allclose(ember.istft(spec, 32, 8, window=w, length=100).numpy(), x.numpy(), atol=1e-12)


WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.skipif(torch_or_none() is None, reason="needs torch")
@pytest.mark.parametrize("name", WINDOWS)
def test_windows_match_torch(name):
    torch = T()
    for n in (0, 1, 2, 5, 16):
        for periodic in (True, False):
            for dtype in ("float32", "float64"):
                e = getattr(ember, name)(n, periodic, dtype=getattr(ember, dtype))
                t = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype))
                assert e.dtype.name == dtype and not e.requires_grad
                np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-7, err_msg=f"{n} {periodic}")
    assert getattr(ember, name)(4).dtype == ember.get_default_dtype()
    assert getattr(ember, name)(4, requires_grad=True).requires_grad
    if name == "hamming_window":
        e, t = ember.hamming_window(9, False, 0.6, 0.3), torch.hamming_window(9, False, 0.6, 0.3)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    if name == "kaiser_window":
        for beta in (0.0, 5.0, 40.0):
            e = ember.kaiser_window(11, True, beta, dtype=ember.float64)
            np.testing.assert_allclose(e.numpy(), torch.kaiser_window(11, True, beta, dtype=torch.float64), rtol=1e-9)


@pytest.mark.skipif(torch_or_none() is None, reason="needs torch")
@pytest.mark.parametrize("name", ember.signal.windows.__all__)
def test_signal_windows_match_torch(name):
    torch = T()
    W = torch.signal.windows

    kws = {"general_cosine": [{"a": [0.5, 0.3, 0.2]}], "kaiser": [{}, {"beta": 3.0}], "gaussian": [{"std": 2.5}],
           "exponential": [{"tau": 2.0}], "general_hamming": [{"alpha": 0.6}]}.get(name, [{}])  # fmt: skip
    for kw in kws:
        for M in (0, 1, 2, 7, 8):
            for sym in (True, False):
                for dtype in ("float32", "float64"):
                    e = getattr(ember.signal.windows, name)(M, sym=sym, dtype=getattr(ember, dtype), **kw)
                    t = getattr(W, name)(M, sym=sym, dtype=getattr(torch, dtype), **kw)
                    assert e.dtype.name == dtype
                    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-7, err_msg=f"{M} {sym} {kw}")
    e = ember.signal.windows.exponential(7, center=1.5, sym=False)
    np.testing.assert_allclose(e.numpy(), W.exponential(7, center=1.5, sym=False).numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda x: ember.stft(x, 8), "return_complex parameter be given"),
        (lambda x: ember.stft(x, 64, center=False, return_complex=True), "0 < n_fft"),
        (lambda x: ember.stft(x, 8, 0, return_complex=True), "hop_length > 0"),
        (lambda x: ember.stft(x, 8, win_length=9, return_complex=True), "0 < win_length <= n_fft"),
        (lambda x: ember.stft(x, 8, window=ember.ones(5), return_complex=True), "size equal to win_length=8"),
        (lambda x: ember.stft(x.reshape(1, 2, 10), 8, return_complex=True), "1D or 2D"),
        (lambda x: ember.stft(x, 8, return_complex=True, align_to_window=True), "center = false"),
        (lambda x: ember.stft(x * 1j, 8, onesided=True), "onesided"),
        (lambda x: ember.stft(x.long(), 8, return_complex=True), "floating point or complex"),
        (lambda x: ember.istft(x, 8), "complex-valued input"),
        (lambda x: ember.istft(ember.zeros(4, 3).cfloat(), 8), "n_fft / 2 + 1"),
        (lambda x: ember.istft(ember.zeros(5, 3).cfloat(), 8, 9), "0 < hop_length <= win_length"),
        (
            lambda x: ember.istft(ember.ones(5, 5).cfloat(), 8, 2, window=ember.hann_window(8), center=False),
            "window overlap add min",
        ),
        (lambda x: ember.hann_window(-1), "non-negative window_length"),
        (lambda x: ember.kaiser_window(4, dtype=ember.int64), "floating point"),
        (lambda x: ember.signal.windows.gaussian(4, std=0), "Standard deviation must be positive"),
        (lambda x: ember.signal.windows.exponential(4, center=1.0), "Center must be None"),
        (lambda x: ember.signal.windows.kaiser(4, beta=-1), "beta must be non-negative"),
        (lambda x: ember.signal.windows.general_cosine(4, a=[]), "Coefficients cannot be empty"),
        (lambda x: ember.signal.windows.hann(-2), "non-negative window length"),
    ],
)
def test_errors_are_clear_and_catchable(call, match):
    x = ember.tensor(r(20))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises((ValueError, TypeError, IndexError)) as info:
            call(x)
    assert isinstance(info.value, (RuntimeError, TypeError))
    assert match in str(info.value)


def test_warnings_as_pytorch():
    x = ember.tensor(r(20))
    with pytest.warns(UserWarning, match="window was not provided"):
        ember.stft(x, 8, return_complex=True)
    with pytest.warns(UserWarning, match="shorter than the length parameter"):
        ember.istft(ember.stft(x, 8, window=ember.ones(8), return_complex=True), 8, length=40)
