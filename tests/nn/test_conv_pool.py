"""Convolution and pooling variants beyond test_functional: 1-d/3-d, strides, padding, dilation, groups,
ties in max pooling, contiguous NCHW outputs, and the scratch-buffer reuse of the convolution kernels."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.testing import check_op

rng = np.random.default_rng(7)


def r(*shape):
    return rng.standard_normal(shape)


def TF():
    return __import__("torch").nn.functional


def same(label, name, args, **kw):
    return (label, lambda *a: getattr(F, name)(*a, **kw), lambda *a: getattr(TF(), name)(*a, **kw), args)


def tup(label, name, args, **kw):
    return (label, lambda *a: tuple(getattr(F, name)(*a, **kw)), lambda *a: tuple(getattr(TF(), name)(*a, **kw)), args)


CASES = [
    same("conv1d_dil_groups", "conv1d", [r(2, 4, 11), r(6, 2, 3), r(6)], dilation=2, groups=2, padding=3),
    same("conv1d_stride_gt_kernel", "conv1d", [r(1, 2, 12), r(3, 2, 2)], stride=3, padding=2),
    same("conv2d_batch1", "conv2d", [r(1, 3, 6, 6), r(4, 3, 3, 3), r(4)], padding=1),
    same("conv2d_big_pad", "conv2d", [r(2, 1, 3, 4), r(2, 1, 2, 2)], padding=(3, 2), stride=2),
    same("conv2d_same_dil", "conv2d", [r(1, 2, 6, 5), r(3, 2, 2, 3)], padding="same", dilation=(2, 1)),
    same("conv2d_1x1_stride", "conv2d", [r(2, 4, 5, 5), r(3, 4, 1, 1)], stride=2),
    same("conv3d", "conv3d", [r(2, 2, 4, 5, 4), r(3, 2, 2, 3, 2), r(3)], stride=(1, 2, 1), padding=1),
    same("conv3d_groups", "conv3d", [r(1, 4, 3, 3, 3), r(4, 2, 2, 2, 2)], groups=2, dilation=(1, 2, 1), padding=1),
    same("conv_transpose1d_dil", "conv_transpose1d", [r(2, 2, 4), r(2, 3, 3), r(3)], stride=2, padding=1, dilation=2,
         output_padding=1),
    same("conv_transpose2d_batch1", "conv_transpose2d", [r(1, 3, 3, 4), r(3, 4, 3, 2)], stride=(2, 3), padding=(1, 0)),
    same("conv_transpose3d", "conv_transpose3d", [r(1, 2, 2, 3, 2), r(2, 3, 2, 2, 2), r(3)], stride=2, padding=1),
    same("unfold_dil", "unfold", [r(2, 3, 6, 7)], kernel_size=(2, 3), dilation=(2, 1), padding=(1, 2), stride=(1, 2)),
    same("fold_stride", "fold", [r(2, 12, 8)], output_size=(5, 6), kernel_size=2, stride=2, padding=(0, 1)),
    same("max_pool1d_ceil_dil", "max_pool1d", [r(2, 3, 10)], kernel_size=3, stride=2, dilation=2, ceil_mode=True),
    same("max_pool2d_overlap_pad", "max_pool2d", [r(2, 3, 9, 8)], kernel_size=3, stride=2, padding=1),
    same("max_pool2d_stride1", "max_pool2d", [r(1, 2, 5, 6)], kernel_size=(2, 3), stride=1),
    tup("max_pool2d_idx_overlap", "max_pool2d", [r(1, 2, 7, 7)], kernel_size=3, stride=2, padding=1,
        return_indices=True),
    tup("max_pool1d_idx", "max_pool1d", [r(2, 2, 9)], kernel_size=2, return_indices=True),
    same("max_pool3d", "max_pool3d", [r(1, 2, 4, 5, 6)], kernel_size=2, stride=(2, 1, 2), padding=(1, 0, 1)),
    same("avg_pool1d_ceil", "avg_pool1d", [r(2, 2, 10)], kernel_size=4, stride=3, padding=2, ceil_mode=True,
         count_include_pad=False),
    same("avg_pool3d", "avg_pool3d", [r(1, 2, 4, 4, 5)], kernel_size=(2, 2, 3), stride=2, padding=1),
    same("avg_pool2d_overlap", "avg_pool2d", [r(2, 2, 7, 6)], kernel_size=3, stride=1, padding=1,
         count_include_pad=False),
    same("adaptive_avg_pool3d", "adaptive_avg_pool3d", [r(1, 2, 4, 6, 4)], output_size=(2, 3, 2)),
    same("adaptive_max_pool3d", "adaptive_max_pool3d", [r(1, 2, 4, 6, 4)], output_size=2),
]  # fmt: skip


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("name,fn,tfn,args", CASES, ids=[c[0] for c in CASES])
def test_conv_pool_variants(name, fn, tfn, args):
    check_op(fn, *args, torch_fn=tfn, name=name)


@pytest.mark.parametrize("name", ["conv_transpose2d", "avg_pool2d", "max_pool2d_overlap", "conv1d_groups"])
def test_second_order(name):
    cases = {
        "conv_transpose2d": (
            lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1),
            [r(1, 2, 3, 3), r(2, 2, 3, 3)],
        ),
        "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), [r(1, 2, 5, 5)]),
        "max_pool2d_overlap": (lambda x: F.max_pool2d(x, 3, stride=2, padding=1), [r(1, 1, 5, 5)]),
        "conv1d_groups": (lambda x, w: F.conv1d(x, w, groups=2, padding=1), [r(2, 4, 5), r(4, 2, 3)]),
    }
    fn, args = cases[name]
    check_op(fn, *args, second_order=True, name=name)


@pytest.mark.parametrize("stride", [2, 1])
def test_max_pool_ties_send_the_gradient_to_the_first_maximum(torch, stride):
    # after a ReLU, whole windows are zero: PyTorch gives each window's gradient to its first element
    x = np.maximum(np.round(r(2, 3, 6, 6)), 0)
    g = r(2, 3, *(3, 3) if stride == 2 else (5, 5))
    xe = ember.tensor(x, requires_grad=True)
    F.max_pool2d(xe, 2, stride).backward(ember.tensor(g))
    xt = torch.tensor(x, requires_grad=True)
    torch.nn.functional.max_pool2d(xt, 2, stride).backward(torch.tensor(g))
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), atol=1e-12)
    _, ie = F.max_pool2d(xe, 2, stride, return_indices=True)
    _, it = torch.nn.functional.max_pool2d(xt, 2, stride, return_indices=True)
    np.testing.assert_array_equal(ie.numpy(), it.numpy())


def test_max_pool_propagates_nan(torch):
    x = r(1, 1, 4, 4)
    x[0, 0, 1, 0] = np.nan
    ye = F.max_pool2d(ember.tensor(x), 2).numpy()
    yt = torch.nn.functional.max_pool2d(torch.tensor(x), 2).numpy()
    np.testing.assert_array_equal(np.isnan(ye), np.isnan(yt))
    np.testing.assert_allclose(ye[~np.isnan(ye)], yt[~np.isnan(yt)])


def test_outputs_are_contiguous_nchw_so_view_works():
    x = ember.tensor(r(4, 3, 12, 12), dtype=ember.float32)
    conv = ember.nn.Conv2d(3, 5, 3, padding=1)
    bn = ember.nn.BatchNorm2d(5)
    y = conv(x)
    assert y.is_contiguous()
    z = F.max_pool2d(F.relu(bn(y)), 2)
    assert z.is_contiguous()
    flat = z.view(z.size(0), -1)
    assert flat.shape == (4, 5 * 6 * 6)
    flat.sum().backward()
    assert conv.weight.grad.is_contiguous() and conv.weight.grad.shape == conv.weight.shape
    w = ember.tensor(r(5, 2, 3, 3), dtype=ember.float32)
    outs = [
        F.conv_transpose2d(y, w, stride=2),
        F.avg_pool2d(y, 2),
        F.max_pool2d(y, 3, 2, 1),
        F.adaptive_avg_pool2d(y, 1),
        F.unfold(y, 2),
        F.fold(F.unfold(y, 2), (12, 12), 2),
        F.conv1d(x.flatten(2), ember.tensor(r(2, 3, 3), dtype=ember.float32)),
    ]
    for o in outs:
        assert o.is_contiguous(), o.shape
        o.view(-1)


def test_results_never_alias_reused_scratch_buffers():
    w = ember.tensor(r(4, 3, 3, 3), requires_grad=True)
    x1, x2 = ember.tensor(r(2, 3, 8, 8), requires_grad=True), ember.tensor(r(2, 3, 8, 8), requires_grad=True)
    y1 = F.conv2d(x1, w, padding=1)
    keep = y1.detach().numpy().copy()
    y1.sum().backward()
    g1 = (x1.grad.numpy().copy(), w.grad.numpy().copy())
    for _ in range(3):  # the same shapes again: the kernels take the buffers the first call gave back
        w.grad = None
        F.conv2d(x2, w, padding=1).sum().backward()
    np.testing.assert_array_equal(y1.detach().numpy(), keep)
    np.testing.assert_array_equal(x1.grad.numpy(), g1[0])
    w.grad = None
    F.conv2d(x1, w, padding=1).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), g1[1])


def test_retain_graph_second_backward_recomputes_the_columns():
    w = ember.tensor(r(2, 1, 3, 3), requires_grad=True)
    x = ember.tensor(r(1, 1, 5, 5))
    y = F.conv2d(x, w).sum()
    y.backward(retain_graph=True)
    first = w.grad.numpy().copy()
    F.conv2d(ember.tensor(r(1, 1, 5, 5)), w).sum().backward()  # reuses the freed buffer
    w.grad = None
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), first)


def test_workspace_is_bounded():
    from ember.backends._kernels_util import Workspace

    ws = Workspace(np, per_key=2, max_bytes=1000)
    arrs = [ws.take((10,), np.float64) for _ in range(4)]
    for a in arrs:
        ws.give(a)
    assert ws._bytes == 160  # two per key
    ws.give(np.empty((20,), np.float64)[::2])  # a view is never kept
    for shape in [(50,), (60,), (70,)]:
        ws.give(np.empty(shape, np.float64))
    assert ws._bytes <= 1000
    assert ws.take((10,), np.float64) is not None


def test_memory_flat_over_many_conv_training_steps():
    # the kernels reuse scratch buffers; nothing may accumulate across steps (graphs, buffers, state)
    import gc
    import tracemalloc

    net = ember.nn.Sequential(
        ember.nn.Conv2d(1, 4, 3, padding=1), ember.nn.BatchNorm2d(4), ember.nn.ReLU(), ember.nn.MaxPool2d(2),
        ember.nn.Conv2d(4, 6, 3, padding="same"), ember.nn.ReLU(), ember.nn.AvgPool2d(2), ember.nn.Flatten(),
        ember.nn.Linear(6 * 2 * 2, 3),
    )  # fmt: skip
    opt = ember.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x, y = ember.randn(5, 1, 8, 8), ember.tensor([0, 1, 2, 1, 0])

    def steps(n):
        for _ in range(n):
            opt.zero_grad()
            F.cross_entropy(net(x), y).backward()
            opt.step()

    steps(50)
    gc.collect()
    tracemalloc.start()
    steps(50)
    gc.collect()  # also empties the interpreter's free lists of small objects
    base = tracemalloc.get_traced_memory()[0]
    steps(300)
    gc.collect()
    now = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert now - base < 50_000
    assert x._backend.workspace._bytes <= x._backend.workspace.max_bytes
