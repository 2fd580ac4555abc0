"""Winograd F(4x4, 3x3) (``_kernels_winograd4``): threads (the same bits as one thread), float32 accuracy, the
choice of variant (``wino_tile``), the dispatch and finite differences. Its forward and both gradients against the
im2col kernels and PyTorch (saved or recomputed tiles, padding, outputs narrower than a tile, bias, blocks of one
channel, threads, non-contiguous input) are ``test_conv_fast_paths``' Winograd tests, run for both tile sizes; its
``ember.compile`` replays are ``test_conv_kernels_compiled``'s."""

import numpy as np
import pytest

import ember
import ember.backends._kernels_threads as kt
import ember.nn.functional as F
from ember.backends._kernels_winograd import WinoSaved, wino_ok, wino_tile
from ember.backends.numpy_backend import NumpyBackend

BE = NumpyBackend()
rng = np.random.default_rng(4)


def _split(monkeypatch):
    monkeypatch.setattr(kt, "_MIN_ROWS_PART", 8)  # the transforms' and products' split (parallel_blocks)
    monkeypatch.setattr(kt, "kernel_threads", lambda: 3)


@pytest.mark.parametrize("relu", [False, True])
def test_winograd4_float32_error_is_small(relu):
    # the conv stack's layer (8x64x32x32): float32 results against float64, on normal inputs and on
    # post-BN/ReLU ones (non-negative, half zeros); measured max errors ~7e-6 of the largest |value|
    x = rng.standard_normal((8, 64, 32, 32))
    if relu:
        x = np.maximum(x, 0)
    w = rng.standard_normal((64, 64, 3, 3)) * (2 / (9 * 64)) ** 0.5
    g = rng.standard_normal((8, 64, 32, 32))
    y64, _ = BE._conv_im2col(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), 1, False, None)
    gx64, gw64 = BE._conv_backward_im2col(g, x, w, None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1, True, True)
    f = [a.astype(np.float32) for a in (x, w, g)]
    y, saved = BE.wino4_conv(f[0], f[1], ((1, 1), (1, 1)), None, True)
    gx, gw = BE.wino4_backward(f[2], f[0], f[1], saved, ((1, 1), (1, 1)), True, True)
    for a, b in ((y, y64), (gx, gx64), (gw, gw64)):
        assert a.dtype == np.float32
        assert np.abs(a - b).max() <= 2e-5 * np.abs(b).max()


def _results():
    x = np.random.default_rng(5).standard_normal((3, 17, 13, 11)).astype(np.float32)
    w = np.random.default_rng(6).standard_normal((18, 17, 3, 3)).astype(np.float32)
    y, saved = BE.wino4_conv(x, w, ((1, 0), (1, 1)), None, True)
    return [y, *BE.wino4_backward(np.cos(y), x, w, saved, ((1, 0), (1, 1)), True, True)]


def test_winograd4_threads_give_the_arrays_of_one_thread(monkeypatch):
    monkeypatch.setattr(kt, "kernel_threads", lambda: 1)
    one = _results()
    _split(monkeypatch)
    for a, b in zip(_results(), one, strict=True):
        np.testing.assert_array_equal(a, b)


def test_wino_tile_picks_f4_where_it_paid():
    one = ((1, 1), (1, 1))
    assert wino_tile((8, 64, 32, 32), 64, one) == 4  # the conv stack
    assert wino_tile((8, 128, 28, 28), 128, one) == 4
    assert wino_tile((32, 64, 8, 8), 64, one) == 4
    assert wino_tile((8, 256, 14, 14), 256, one) == 2  # few pixels per weight
    assert wino_tile((8, 256, 8, 8), 256, one) == 2
    assert wino_tile((4, 16, 32, 32), 16, one) == 4
    assert wino_tile((4, 16, 32, 32), 512, one) == 2  # (the wider of C and O counts)
    assert wino_tile((1, 16, 32, 32), 16, one) == 2  # small
    assert wino_tile((64, 16, 7, 7), 16, one) == 2  # outputs under 8x8
    assert wino_tile((64, 16, 8, 8), 16, one) == 4
    assert wino_tile((64, 16, 8, 8), 16, ((0, 0), (0, 0))) == 2  # 6x6 outputs


def test_conv_dispatches_to_f4_and_its_backward_follows(monkeypatch):
    calls = []
    for name in ("wino4_conv", "wino4_backward", "wino_conv", "wino_backward"):
        real = getattr(BE, name)
        monkeypatch.setattr(BE, name, lambda *a, _r=real, _n=name, **k: calls.append(_n) or _r(*a, **k))
    x = rng.standard_normal((4, 16, 32, 32)).astype(np.float32)
    w = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    geo = ((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    assert wino_ok(x, w.shape, (1, 1), (1, 1), 1) and wino_tile(x.shape, 16, ((1, 1), (1, 1))) == 4
    y, saved = BE.conv(x, w, *geo, True)
    assert isinstance(saved, WinoSaved) and saved.m == 4
    g = rng.standard_normal(y.shape).astype(np.float32)
    gx, gw = BE.conv_backward(g, x, w, saved, *geo)
    gx2, gw2 = BE.conv_backward(g, x, w, None, *geo)  # nothing saved: the same rule picks F(4x4, 3x3)
    assert calls == ["wino4_conv", "wino4_backward", "wino4_backward"]
    np.testing.assert_array_equal(gx, gx2)
    np.testing.assert_array_equal(gw, gw2)
    BE.conv(x[:1], w, *geo)  # 1024 pixels: F(2x2, 3x3)
    assert calls[-1] == "wino_conv"


class _OtherArrays:
    """NumPy under another name: how ``ConvKernels`` sees CuPy's module (anything but NumPy itself)."""

    def __getattr__(self, name):
        return getattr(np, name)


def test_f4_serves_numpy_only_until_it_has_run_on_a_gpu(monkeypatch):
    # CuPy keeps F(2x2, 3x3) (run on a GPU in earlier sessions), forward and a recomputing backward alike
    calls = []
    for name in ("wino4_conv", "wino4_backward", "wino_conv", "wino_backward"):
        real = getattr(BE, name)
        monkeypatch.setattr(BE, name, lambda *a, _r=real, _n=name, **k: calls.append(_n) or _r(*a, **k))
    x = rng.standard_normal((4, 16, 32, 32))
    w = rng.standard_normal((16, 16, 3, 3))
    geo = ((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    y_ref = BE._conv_im2col(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), 1, False, None)[0]
    monkeypatch.setattr(BE, "xp", _OtherArrays())
    y, saved = BE.conv(x, w, *geo, True)
    BE.conv_backward(np.ones_like(y), x, w, None, *geo)
    assert saved.m == 2 and calls == ["wino_conv", "wino_backward"]
    np.testing.assert_allclose(y, y_ref, rtol=1e-12, atol=1e-12)


def test_conv2d_f4_gradients_by_finite_differences():
    # float64, a shape that takes F(4x4, 3x3) through F.conv2d: directional finite differences for x, w and b
    x = rng.standard_normal((4, 16, 32, 32))
    w = rng.standard_normal((16, 16, 3, 3)) * 0.1
    b = rng.standard_normal(16)
    assert wino_tile(x.shape, 16, ((1, 1), (1, 1))) == 4
    r = rng.standard_normal((4, 16, 32, 32))
    xe, we, be = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
    (F.conv2d(xe, we, be, padding=1) * ember.tensor(r)).sum().backward()

    def value(*args):
        return float((F.conv2d(*(ember.tensor(a) for a in args), padding=1) * ember.tensor(r)).sum())

    for grad, arg in ((xe.grad, 0), (we.grad, 1), (be.grad, 2)):
        base = [x, w, b]
        v = rng.standard_normal(base[arg].shape)
        hi = [a + 1e-6 * v if i == arg else a for i, a in enumerate(base)]
        lo = [a - 1e-6 * v if i == arg else a for i, a in enumerate(base)]
        fd = (value(*hi) - value(*lo)) / 2e-6
        np.testing.assert_allclose(fd, float((grad.numpy() * v).sum()), rtol=1e-6)
