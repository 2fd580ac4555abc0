"""The convolution's fast paths against the plain im2col kernels: Winograd F(2x2, 3x3) (forward, both
gradients, saved or recomputed tiles, padding even/odd/uneven, bias, batch 1) and the work split over
threads (im2col/col2im, layout copies, pooling), which must give the same arrays as one thread."""

import numpy as np
import pytest

import ember
import ember.backends._kernels_batch_last as kbl
import ember.backends._kernels_conv as kc
import ember.backends._kernels_threads as kt
import ember.backends._kernels_winograd as kw
import ember.nn.functional as F
from ember.backends._kernels_batch_last import BatchLastCols
from ember.backends._kernels_winograd import wino_ok
from ember.backends.numpy_backend import NumpyBackend

BE = NumpyBackend()
rng = np.random.default_rng(3)


@pytest.fixture
def split(monkeypatch):
    """Three threads and tiny parts, so that every parallel kernel really splits its work."""
    monkeypatch.setattr(kt, "_MIN_PART", 8)
    monkeypatch.setattr(kt, "_opt_in_threads", lambda: 3)
    monkeypatch.setattr(kt, "_MIN_ROWS_PART", 8)  # the Winograd transforms' split (parallel_blocks)
    monkeypatch.setattr(kt, "_MIN_CALL_PART", 8)  # the im2col columns' split (parallel_calls)
    monkeypatch.setattr(kt, "kernel_threads", lambda: 3)


SHAPES = [  # x shape, out channels, pads
    ((2, 3, 7, 6), 4, ((1, 1), (1, 1))),
    ((1, 2, 5, 8), 3, ((0, 0), (0, 0))),
    ((2, 3, 6, 6), 2, ((2, 1), (0, 2))),
    ((3, 4, 9, 9), 5, ((1, 1), (1, 1))),
    ((1, 2, 4, 3), 2, ((1, 1), (1, 1))),
    ((2, 3, 10, 13), 3, ((2, 2), (0, 1))),  # padding wider than the kernel's reach on one side
]


@pytest.mark.parametrize("m", [2, 4])  # F(2x2, 3x3) (_kernels_winograd) and F(4x4, 3x3) (_kernels_winograd4)
@pytest.mark.parametrize("blocks", [False, True])
@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("x_shape,o,pads", SHAPES)
def test_winograd_matches_im2col(request, monkeypatch, threads, blocks, x_shape, o, pads, m):
    if threads:
        request.getfixturevalue("split")
    if blocks:  # the transforms one channel at a time (they run over a block of channels' planes flat)
        monkeypatch.setattr(kw, "_BLOCK_ELEMS", 1)
    conv, backward = (BE.wino_conv, BE.wino_backward) if m == 2 else (BE.wino4_conv, BE.wino4_backward)
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal((o, x_shape[1], 3, 3))
    b = rng.standard_normal(o)
    y_ref = BE._conv_im2col(x, w, (1, 1), pads, (1, 1), 1, False, b)[0]
    y, saved = conv(x, w, pads, b, True)
    assert saved.m == m and saved.v.shape[0] == (m + 2) ** 2
    np.testing.assert_allclose(y, y_ref, rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(y.shape)
    gx_ref, gw_ref = BE._conv_backward_im2col(g, x, w, None, (1, 1), pads, (1, 1), 1, True, True)
    gx, gw = backward(g, x, w, saved, pads, True, True)
    np.testing.assert_allclose(gx, gx_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gw, gw_ref, rtol=1e-12, atol=1e-12)
    _, gw2 = backward(g, x, w, None, pads, False, True)  # the tiles recomputed
    np.testing.assert_allclose(gw2, gw_ref, rtol=1e-12, atol=1e-12)
    gx3, _ = backward(g, x, w, None, pads, True, False)
    np.testing.assert_allclose(gx3, gx_ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_winograd_of_a_non_contiguous_input_matches_torch(torch, dtype, m):
    # x a transposed view (N and C swapped), odd output sizes (uneven padding), float32 and float64, several
    # blocks of channels: values and both gradients against PyTorch's convolution, F(2x2, 3x3) and F(4x4, 3x3)
    x = rng.standard_normal((17, 2, 33, 30)).astype(dtype).transpose(1, 0, 2, 3)
    w = (rng.standard_normal((20, 17, 3, 3)) * 0.1).astype(dtype)
    pads = ((1, 0), (2, 1))
    assert wino_ok(x, w.shape, (1, 1), (1, 1), 1) and not x.flags.c_contiguous
    conv, backward = (BE.wino_conv, BE.wino_backward) if m == 2 else (BE.wino4_conv, BE.wino4_backward)
    y, saved = conv(x, w, pads, None, True)
    g = rng.standard_normal(y.shape).astype(dtype)
    gx, gw = backward(g, x, w, saved, pads, True, True)
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    yt = torch.nn.functional.conv2d(torch.nn.functional.pad(xt, (2, 1, 1, 0)), wt)
    yt.backward(torch.tensor(g))
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for a, b in ((y, yt.detach()), (gx, xt.grad), (gw, wt.grad)):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, b.numpy(), rtol=tol, atol=tol * float(np.abs(b.numpy()).max()))


def test_winograd_serves_3x3_stride_1_convolutions_with_enough_work():
    x = np.zeros((8, 64, 32, 32), dtype=np.float32)
    assert wino_ok(x, (64, 64, 3, 3), (1, 1), (1, 1), 1)
    assert not wino_ok(x, (64, 64, 3, 3), (2, 2), (1, 1), 1)  # strided
    assert not wino_ok(x, (64, 32, 3, 3), (1, 1), (1, 1), 2)  # grouped
    assert not wino_ok(x, (64, 64, 5, 5), (1, 1), (1, 1), 1)
    assert not wino_ok(x, (64, 64, 3, 3), (1, 1), (2, 2), 1)  # dilated
    assert not wino_ok(x.astype(np.float16), (64, 64, 3, 3), (1, 1), (1, 1), 1)
    assert not wino_ok(x[:1, :, :16, :16], (64, 64, 3, 3), (1, 1), (1, 1), 1)  # too few pixels
    assert not wino_ok(x[:, :8], (64, 8, 3, 3), (1, 1), (1, 1), 1)  # too few channels


def _directional(f, x, v, eps=1e-6):
    return (f(x + eps * v) - f(x - eps * v)) / (2 * eps)


def test_winograd_conv2d_gradients_by_finite_differences_and_torch(torch):
    # big enough for the Winograd path (16 channels, 1024 pixels); float64 finite differences along a
    # random direction for x, w and b, then PyTorch's values and gradients
    x = rng.standard_normal((1, 16, 32, 32))
    w = rng.standard_normal((16, 16, 3, 3)) * 0.1
    b = rng.standard_normal(16)
    assert wino_ok(x, w.shape, (1, 1), (1, 1), 1)
    r = rng.standard_normal((1, 16, 32, 32))
    xe, we, be = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
    loss = (F.conv2d(xe, we, be, padding=1) * ember.tensor(r)).sum()
    loss.backward()

    def value(xa, wa, ba):
        return float(
            (F.conv2d(ember.tensor(xa), ember.tensor(wa), ember.tensor(ba), padding=1) * ember.tensor(r)).sum()
        )

    for grad, arg in ((xe.grad, 0), (we.grad, 1), (be.grad, 2)):
        v = rng.standard_normal((x, w, b)[arg].shape)
        args = [x, w, b]

        def f(a, arg=arg, args=args):
            return value(*[a if i == arg else args[i] for i in range(3)])

        np.testing.assert_allclose(_directional(f, (x, w, b)[arg], v), float((grad.numpy() * v).sum()), rtol=1e-6)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    yt = torch.nn.functional.conv2d(xt, wt, bt, padding=1)
    (yt * torch.tensor(r)).sum().backward()
    np.testing.assert_allclose(float(loss.item()), float((yt.detach() * torch.tensor(r)).sum()), rtol=1e-10)
    for e, t in ((xe, xt), (we, wt), (be, bt)):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-10)


def _kernel_results():
    x = np.random.default_rng(9).standard_normal((4, 3, 12, 11)).astype(np.float32)
    w = np.random.default_rng(10).standard_normal((5, 3, 3, 2)).astype(np.float32)
    res = []
    for xb in (x, x[:1]):  # batches split by entry; a batch of one by channel
        geo = ((2, 1), ((1, 1), (0, 1)), (1, 1), 1)  # strided: im2col and col2im
        y, saved = BE.conv(xb, w, *geo, True)
        res += [y, *BE.conv_backward(np.cos(y), xb, w, saved, *geo)]
        for k, s, p in (((2, 2), (2, 2), (0, 0)), ((3, 3), (2, 2), (1, 1))):  # disjoint and overlapping windows
            pooled = BE.max_pool(xb, k, s, p, (1, 1), False)[0]
            res += [pooled, BE.max_pool_backward(np.sin(pooled), xb, pooled, None, k, s, p, (1, 1), False)]
    xw = np.random.default_rng(11).standard_normal((3, 17, 9, 8)).astype(np.float32)  # Winograd, odd output
    ww = np.random.default_rng(12).standard_normal((16, 17, 3, 3)).astype(np.float32)
    y, saved = BE.wino_conv(xw, ww, ((1, 0), (1, 1)), None, True)
    res += [y, *BE.wino_backward(np.cos(y), xw, ww, saved, ((1, 0), (1, 1)), True, True)]
    return res


def test_threaded_kernels_give_the_arrays_of_one_thread(monkeypatch):
    monkeypatch.setattr(kt, "_opt_in_threads", lambda: 1)
    monkeypatch.setattr(kt, "kernel_threads", lambda: 1)
    one = _kernel_results()
    monkeypatch.setattr(kt, "_MIN_PART", 8)
    monkeypatch.setattr(kt, "_opt_in_threads", lambda: 3)
    monkeypatch.setattr(kt, "_MIN_ROWS_PART", 8)
    monkeypatch.setattr(kt, "_MIN_CALL_PART", 8)
    monkeypatch.setattr(kt, "kernel_threads", lambda: 3)
    for a, b in zip(_kernel_results(), one, strict=True):
        np.testing.assert_array_equal(a, b)


IM2COL = [  # x shape, kernel, stride, pads, dilation
    ((2, 3, 7, 6), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),
    ((64, 1, 12, 12), (5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1)),
    ((2, 2, 9, 8), (3, 2), (2, 3), ((2, 0), (1, 2)), (2, 1)),
    ((1, 4, 6, 7), (2, 3), (1, 2), ((0, 0), (0, 0)), (1, 2)),
    ((3, 2, 11), (4,), (3,), ((1, 2),), (2,)),
    ((2, 2, 4, 5, 3), (2, 3, 2), (1, 2, 1), ((1, 0), (0, 1), (1, 1)), (1, 1, 2)),
    ((1, 1, 3, 3), (3, 3), (1, 1), ((3, 3), (3, 3)), (2, 2)),  # windows that see only padding
]


@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("x_shape,k,s,pads,d", IM2COL)
def test_im2col_window_copy_equals_the_copy_per_offset(request, threads, x_shape, k, s, pads, d):
    # NumPy's one strided copy against the per-offset kernel that CuPy runs, every geometry
    if threads:
        request.getfixturevalue("split")
    x = rng.standard_normal(x_shape).astype(np.float32)
    cols, out = BE._im2col(x, k, s, pads, d)
    want = np.full_like(cols, np.nan)
    BE._im2col_offsets(x, want, k, s, pads, d, out)
    np.testing.assert_array_equal(cols, want)
    BE.workspace.give(cols)


BATCH_LAST = [  # x shape, weight shape, stride, pads, dilation, groups: input gradients by col2im
    ((4, 6, 14, 14), (16, 6, 5, 5), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),  # LeNet-5's second layer
    ((64, 6, 14, 14), (16, 6, 5, 5), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),  # at batch 64: planes of >= _PLANE
    ((3, 4, 9, 8), (6, 2, 3, 2), (2, 3), ((2, 0), (1, 2)), (2, 1), 2),  # strided, dilated, uneven pads, groups
    ((2, 3, 11), (4, 3, 4), (3,), ((1, 2),), (2,), 1),
    ((2, 2, 5, 6, 4), (3, 2, 2, 3, 2), (1, 2, 1), ((1, 0), (0, 1), (1, 1)), (1, 1, 2), 1),
    ((2, 2, 3, 3), (2, 2, 3, 3), (1, 1), ((3, 3), (3, 3)), (2, 2), 1),  # windows that see only padding
    ((5, 3, 7, 7), (4, 3, 3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1),
]


@pytest.mark.parametrize("x_shape,w_shape,s,pads,d,groups", BATCH_LAST)
def test_input_grad_batch_last_equals_col2im(x_shape, w_shape, s, pads, d, groups):
    # NumPy's batch-last col2im against the (C, *k, N, *out) one that CuPy and a batch of one use (float64)
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal(w_shape)
    y = BE.conv(x, w, s, pads, d, groups)[0]
    g = rng.standard_normal(y.shape)
    gt = BE._rows(g)[0]
    want = BE._finish_input_grad(BE._input_cols(gt, w, groups), w, g.shape, s, pads, d, groups, x_shape)
    got = BE._input_grad_batch_last(BE._batch_last_t(g), w, s, pads, d, groups, x_shape)
    assert got.shape == tuple(x_shape) and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    gx, _ = BE.conv_backward(g, x, w, None, s, pads, d, groups, True, False)
    if not BE._flip_ok(w, g.shape, x_shape, s, pads, d, groups):  # the path conv_backward takes
        np.testing.assert_allclose(gx, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("x_shape,w_shape,s,pads,d,groups", BATCH_LAST)
def test_input_grad_batch_last_matches_torch(x_shape, w_shape, s, pads, d, groups):
    torch = pytest.importorskip("torch")
    sp = len(x_shape) - 2
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal(w_shape)
    xp = np.pad(x, ((0, 0), (0, 0), *pads))  # the padding done here, so torch's convolution pads nothing
    xt, wt = torch.tensor(xp, requires_grad=True), torch.tensor(w, requires_grad=True)
    conv = (torch.nn.functional.conv1d, torch.nn.functional.conv2d, torch.nn.functional.conv3d)[sp - 1]
    yt = conv(xt, wt, None, s, 0, d, groups)
    g = rng.standard_normal(tuple(yt.shape))
    yt.backward(torch.tensor(g))
    gx, gw = BE.conv_backward(g, x, w, None, s, pads, d, groups, True, True)
    want = xt.grad.numpy()[(slice(None), slice(None), *(slice(lo, lo + n) for (lo, _), n in zip(pads, x_shape[2:])))]
    np.testing.assert_allclose(gx, want, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gw, wt.grad.numpy(), rtol=1e-10, atol=1e-10)


SHIFTED = [  # x shape, weight shape, stride, pads, dilation: one group, stride 1 along the last axis
    ((4, 6, 14, 14), (16, 6, 5, 5), (1, 1), ((0, 0), (0, 0)), (1, 1)),  # LeNet-5's second layer
    ((3, 2, 9, 7), (3, 2, 3, 2), (2, 1), ((2, 0), (1, 2)), (2, 3)),  # strided first axis, dilated, uneven pads
    ((2, 3, 11), (4, 3, 4), (1,), ((1, 2),), (2,)),  # 1-d
    ((2, 2, 5, 6, 7), (3, 2, 2, 3, 2), (1, 2, 1), ((1, 0), (0, 1), (1, 1)), (1, 1, 2)),
    ((2, 2, 3, 3), (2, 2, 3, 3), (1, 1), ((3, 3), (3, 3)), (2, 2)),  # windows that see only padding
    ((3, 1, 5, 4), (2, 1, 1, 4), (1, 1), ((0, 0), (0, 0)), (1, 1)),  # the kernel as wide as the input
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape,w_shape,s,pads,d", SHIFTED)
def test_input_grad_shifted_equals_col2im(dtype, x_shape, w_shape, s, pads, d):
    # the shifted-rows input gradient against the (C, *k, N, *out) col2im (the output gradient a
    # non-contiguous view), and the path _input_grad_batch_last takes for these geometries
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    y = BE.conv(x, w, s, pads, d, 1)[0]
    g = rng.standard_normal((y.shape[1], y.shape[0], *y.shape[2:])).astype(dtype).swapaxes(0, 1)
    gt = BE._rows(g)[0]
    want = BE._finish_input_grad(BE._input_cols(gt, w, 1), w, g.shape, s, pads, d, 1, x_shape)
    got = BE._input_grad_shifted(BE._batch_last_t(g), w, s, pads, d, x_shape)
    assert got.shape == tuple(x_shape) and got.dtype == dtype and got.flags.c_contiguous
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    via = BE._input_grad_batch_last(BE._batch_last_t(g), w, s, pads, d, 1, x_shape)
    np.testing.assert_array_equal(via, got)


@pytest.mark.parametrize("x_shape,w_shape,s,pads,d,groups", BATCH_LAST)
def test_batch_last_convolution_equals_im2col(monkeypatch, x_shape, w_shape, s, pads, d, groups):
    # forward (with bias), both gradients from the kept batch-last columns or recomputed ones, and the
    # weight-only gradient, against the (C, *k, N, *out) kernels (float64)
    x, w, b = rng.standard_normal(x_shape), rng.standard_normal(w_shape), rng.standard_normal(w_shape[0])
    out = tuple(
        (n + lo + hi - dd * (kk - 1) - 1) // ss + 1
        for n, (lo, hi), dd, kk, ss in zip(x_shape[2:], pads, d, w_shape[2:], s)
    )
    y, saved = BE._conv_batch_last(x, w, s, pads, d, groups, True, b, out)
    assert isinstance(saved, BatchLastCols)
    g = rng.standard_normal(y.shape)
    got = [y, *BE.conv_backward(g, x, w, saved, s, pads, d, groups)]
    got += BE.conv_backward(g, x, w, None, s, pads, d, groups, False, True)[1:]
    got.append(
        BE.conv_weight(
            x, g, s, pads, d, groups, w_shape, BE._conv_batch_last(x, w, s, pads, d, groups, True, b, out)[1]
        )
    )
    monkeypatch.setattr(NumpyBackend, "_batch_last_ok", lambda self, x_shape, w_shape, out: False)
    y_ref, saved_ref = BE._conv_im2col(x, w, s, pads, d, groups, True, b)
    gx_ref, gw_ref = BE.conv_backward(g, x, w, saved_ref, s, pads, d, groups)
    for a, want in zip(got, [y_ref, gx_ref, gw_ref, gw_ref, gw_ref], strict=True):
        assert a.shape == want.shape and a.flags.c_contiguous
        np.testing.assert_allclose(a, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("per_channel", [False, True])
def test_batch_first_equals_one_transposed_copy(monkeypatch, per_channel):
    monkeypatch.setattr(kbl, "_PLANE", 1 if per_channel else 1 << 30)
    r = rng.standard_normal((6, 14, 16, 64)).astype(np.float32)
    cases = [r, r[:, :, 1:15], rng.standard_normal((3, 5, 7)), rng.standard_normal((2, 4, 3, 2, 5)), r[:1, :1, :1]]
    for a in cases:  # (the second a non-contiguous crop, as the shifted input gradient's)
        got = kbl._batch_first(a)
        assert got.flags.c_contiguous and got.dtype == a.dtype
        np.testing.assert_array_equal(got, np.moveaxis(a, -1, 0))


def test_batch_last_serves_short_output_rows_of_a_batch_with_many_columns():
    assert BE._batch_last_ok((64, 6, 14, 14), (16, 6, 5, 5), (10, 10))  # LeNet-5's second layer
    assert not BE._batch_last_ok((64, 1, 32, 32), (6, 1, 5, 5), (28, 28))  # its first: long rows
    assert not BE._batch_last_ok((1, 6, 14, 14), (16, 6, 5, 5), (10, 10))  # a batch of one
    assert not BE._batch_last_ok((128, 128, 16, 16), (256, 128, 1, 1), (8, 8))  # ResNet-18's 1x1 stride 2
    assert not BE._batch_last_ok((128, 128, 16, 16), (256, 128, 3, 3), (8, 8))  # and its 3x3 stride 2
    assert not BE._batch_last_ok((4, 6, 14, 14), (16, 6, 5, 5), (0, 3))


PER_ENTRY = [  # x shape, w shape, stride, pads, dilation: small weights, multiplied per batch entry
    ((4, 1, 11, 9), (6, 1, 5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1)),
    ((3, 2, 9, 8), (3, 2, 3, 2), (2, 3), ((2, 0), (1, 2)), (2, 1)),
    ((2, 3, 13), (5, 3, 4), (3,), ((1, 2),), (2,)),
    ((2, 2, 5, 6, 4), (3, 2, 2, 3, 2), (1, 2, 1), ((1, 0), (0, 1), (1, 1)), (1, 1, 2)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape,w_shape,s,pads,d", PER_ENTRY)
def test_per_entry_products_equal_the_whole_product(monkeypatch, dtype, x_shape, w_shape, s, pads, d):
    # the forward (with bias) and the weight gradient per batch entry against one product over the batch;
    # the input a non-contiguous view
    x = rng.standard_normal((x_shape[1], x_shape[0], *x_shape[2:])).astype(dtype).swapaxes(0, 1)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype)
    assert BE._per_entry(x.shape[0], w.shape, 1)

    def run():
        y, saved = BE.conv(x, w, s, pads, d, 1, True, b)
        g = np.cos(y)
        return [y, *BE.conv_backward(g, x, w, saved, s, pads, d, 1), BE.conv_backward(g, x, w, None, s, pads, d, 1)[1]]

    got = run()
    monkeypatch.setattr(kc, "_SMALL_WEIGHT", 0)
    assert not BE._per_entry(x.shape[0], w.shape, 1)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, r in zip(got, run(), strict=True):
        assert a.dtype == dtype and a.flags.c_contiguous
        np.testing.assert_allclose(a, r, rtol=tol, atol=tol)


def test_per_entry_products_serve_small_weights_of_a_batch():
    assert BE._per_entry(64, (6, 1, 5, 5), 1)
    assert not BE._per_entry(1, (6, 1, 5, 5), 1)  # a batch of one: one product anyway
    assert not BE._per_entry(64, (6, 1, 5, 5), 2)  # grouped
    assert not BE._per_entry(8, (64, 64, 3, 3), 1)  # large weights: one product


@pytest.mark.parametrize(
    "shape,dtype",
    [
        ((64, 6, 28, 28), np.float32),  # LeNet-5's first layer
        ((3, 4, 5), np.float64),  # 1-d
        ((2, 3, 4, 5, 3), np.float64),  # 3-d
        ((1, 5, 7, 7), np.float32),  # a batch of one: one sum over the axes
        ((4, 3, 2, 2), np.complex128),
    ],
)
def test_conv_bias_grad_sums_all_but_the_channels(shape, dtype):
    g = rng.standard_normal((shape[1], shape[0], *shape[2:])).astype(dtype).swapaxes(0, 1)  # non-contiguous
    if np.iscomplexobj(g):
        g = g + 1j * rng.standard_normal(g.shape)
    got = BE.conv_bias_grad(g)
    want = g.astype(np.complex128 if np.iscomplexobj(g) else np.float64).sum(axis=(0, *range(2, g.ndim)))
    assert got.shape == (shape[1],) and got.dtype == dtype
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
