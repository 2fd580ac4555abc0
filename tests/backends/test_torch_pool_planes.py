"""2-d max pooling on the torch backend through torch's channels-last kernel over the (sample, channel) planes
(``backends/torch/pool_kernels.py``): the same values (bit for bit: NaN payloads, signed zeros) and indices as
torch's (N, C, H, W) kernel over ties, NaN, +-inf and +-0 in every geometry; where the path applies and where not;
the backend's forward and backward; and ``F.max_pool2d`` against PyTorch and by finite differences at shapes that
take the path (on the NumPy backend the same tests check its own kernels)."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.testing import check_op

torch = pytest.importorskip("torch")
from ember.backends.torch import pool_kernels  # noqa: E402
from ember.backends.torch.pool_kernels import MAX_ELEMENTS, max_pool2d_planes_last  # noqa: E402

A = torch.ops.aten
POOL = A.max_pool2d_with_indices.default
SPECIALS = [0.0, -0.0, 1.0, 1.0, 2.0, -1.0, float("nan"), float("inf"), -float("inf")]
GEOMETRIES = [  # (spatial, kernel, stride, padding, dilation, ceil_mode)
    ((28, 28), 2, 2, 0, 1, False),  # LeNet-5's pools
    ((10, 10), 2, 2, 0, 1, False),
    ((7, 9), 2, 2, 0, 1, False),  # odd: the last row and column left out
    ((7, 9), 2, 2, 0, 1, True),  # ceil_mode: clipped windows
    ((9, 11), 3, 2, 1, 1, False),  # overlapping, padded
    ((9, 11), 3, 2, 1, 1, True),
    ((10, 10), 2, 2, 1, 2, False),  # dilation
    ((6, 7), (2, 3), (1, 2), (1, 0), (1, 1), False),  # uneven kernel and stride
    ((1, 5), (1, 2), 1, 0, 1, False),  # (max_pool1d's form)
    ((3, 3), 3, 1, 1, 1, True),
]


def _bits(a):
    return a.view(torch.int32 if a.dtype == torch.float32 else torch.int64)


def _pair(v):
    return [v, v] if isinstance(v, int) else list(v)


def _specials(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    vals = torch.tensor(SPECIALS, dtype=dtype)
    x = vals[torch.randint(0, len(SPECIALS), shape, generator=g)]
    x.view(-1)[::3] = torch.randn(x.numel() // 3 + (x.numel() % 3 > 0), generator=g, dtype=dtype).round()
    return x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", GEOMETRIES)
def test_planes_path_is_the_nchw_kernel_bit_for_bit(case, dtype):
    spatial, k, s, p, d, ceil = case
    k, s, p, d = _pair(k), _pair(s), _pair(p), _pair(d)
    for n, c, seed in ((4, 5, 0), (1, 16, 1), (3, 17, 2)):  # 20, 16 and 51 planes (a vector and a scalar tail)
        x = _specials((n, c, *spatial), dtype, seed)
        got = max_pool2d_planes_last(POOL, x, k, s, p, d, ceil, True)
        assert got is not None
        y, idx = got
        y_ref, idx_ref = POOL(x, k, s, p, d, ceil)
        assert y.is_contiguous() and idx.is_contiguous() and y.shape == y_ref.shape and idx.dtype == torch.int64
        assert torch.equal(_bits(y), _bits(y_ref))  # NaN payloads and the sign of zeros included
        assert torch.equal(idx, idx_ref)
        y2, none = max_pool2d_planes_last(POOL, x, k, s, p, d, ceil, False)
        assert none is None and torch.equal(_bits(y2), _bits(y_ref))


def test_where_the_path_applies():
    k, s, p, d = [2, 2], [2, 2], [0, 0], [1, 1]

    def applies(x):
        return max_pool2d_planes_last(POOL, x, k, s, p, d, False, True) is not None

    assert applies(torch.randn(1, 16, 4, 4)) and applies(torch.randn(64, 6, 28, 28, dtype=torch.float64))
    assert not applies(torch.randn(1, 15, 4, 4))  # too few planes for a vector
    assert not applies(torch.randn(64, 6, 28, 28).transpose(2, 3))  # not contiguous
    assert not applies(torch.randn(64, 6, 28, 28).to(torch.float16))
    assert not applies(torch.randn(4, 16, 4))  # not 4-d
    assert not applies(torch.zeros(MAX_ELEMENTS // 16 + 1, 16, 1, 1))  # too large: its copies leave the cache
    assert applies(torch.zeros(MAX_ELEMENTS // 1024, 16, 8, 8))


@pytest.mark.parametrize("shape", [(64, 6, 28, 28), (64, 16, 10, 10), (3, 7, 9, 11)])
def test_backend_forward_and_backward_equal_torchs_nchw_kernels(shape):
    be = ember.backends.get("torch")
    x = torch.randn(shape).relu().round()  # ties (zeros and integers)
    k, s, p, d = (2, 2), (2, 2), (0, 0), (1, 1)
    y, idx = be.max_pool(x, k, s, p, d, False, save=True)
    y_ref, idx_ref = POOL(x, list(k), list(s), list(p), list(d), False)
    assert torch.equal(y, y_ref) and torch.equal(idx, idx_ref)
    assert torch.equal(be.max_pool(x, k, s, p, d, False)[0], y_ref)
    assert torch.equal(be.max_pool_indices(x, y, None, k, s, p, d, False), idx_ref)
    g = torch.randn(y.shape)
    ref = A.max_pool2d_with_indices_backward.default(g, x, list(k), list(s), list(p), list(d), False, idx_ref)
    assert torch.equal(be.max_pool_backward(g, x, y, idx, k, s, p, d, False), ref)
    assert torch.equal(be.max_pool_backward(g, x, y, None, k, s, p, d, False), ref)


def test_path_is_taken_for_lenets_pools(monkeypatch):
    """The backend goes through the planes path at LeNet-5's shapes (a spy on the module's function)."""
    calls = []
    real = pool_kernels.max_pool2d_planes_last

    def spy(*args):
        out = real(*args)
        calls.append(out is not None)
        return out

    import ember.backends.torch.kernels as tk

    monkeypatch.setattr(tk, "max_pool2d_planes_last", spy)
    be = ember.backends.get("torch")
    be.max_pool(torch.randn(64, 6, 28, 28), (2, 2), (2, 2), (0, 0), (1, 1), False, save=True)
    be.max_pool(torch.randn(2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False, save=True)
    assert calls[0] and len(calls) > 1 and not any(calls[1:])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", GEOMETRIES[:6])
def test_max_pool2d_matches_pytorch_with_ties_and_nan(case, dtype):
    """Forward, indices and gradient of ``F.max_pool2d`` against PyTorch at shapes with 20 planes, on either
    backend (the torch backend through the planes path)."""
    spatial, k, s, p, d, ceil = case
    rng = np.random.default_rng(3)
    x = np.round(rng.standard_normal((4, 5, *spatial)) * 1.5).astype(dtype)  # ties
    x.reshape(-1)[::41] = np.nan
    x.reshape(-1)[5::53] = -np.inf
    xe = ember.tensor(x, requires_grad=True)
    ye, ie = F.max_pool2d(xe, k, s, p, d, ceil, return_indices=True)
    xt = torch.tensor(x, requires_grad=True)
    yt, it = torch.nn.functional.max_pool2d(xt, k, s, p, d, ceil, return_indices=True)
    g = np.round(rng.standard_normal(tuple(yt.shape)) * 3).astype(dtype)  # integers: sums exact in any order
    ye.backward(ember.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_array_equal(ye.detach().numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(ie.numpy(), it.numpy())
    np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())


def test_unbatched_input_and_pool_after_relu_match_pytorch():
    rng = np.random.default_rng(4)
    x = np.round(rng.standard_normal((16, 6, 8))).astype(np.float32)  # (C, H, W): 16 planes
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    F.max_pool2d(F.relu(xe), 2).sum().backward()
    torch.nn.functional.max_pool2d(torch.relu(xt), 2).sum().backward()
    np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("shape", [(2, 8, 6, 8), (1, 17, 5, 7)])
def test_max_pool2d_gradcheck_and_torch_parity_at_path_shapes(shape):
    """First and second order (the double backward gathers at the indices the path gives)."""
    rng = np.random.default_rng(6)
    tf = torch.nn.functional
    for args in ((2,), (3, 2, 1)):
        check_op(lambda x, a=args: F.max_pool2d(x, *a), rng.standard_normal(shape), second_order=True,
                 torch_fn=lambda x, a=args: tf.max_pool2d(x, *a), name=f"max_pool2d{args}")  # fmt: skip
