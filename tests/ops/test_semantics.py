"""Regression tests for semantics that once differed from PyTorch (issue 14, section 2).

Each test runs the same code with ``lib = ember`` and ``lib = torch`` and compares values, dtypes and
shapes, or checks that both raise.
"""

import numpy as np
import pytest

import ember
from ember.testing import torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


def F(lib):
    return lib.nn.functional


def as_np(x):
    if isinstance(x, ember.Tensor):
        return x.detach().numpy(), x.dtype.name
    return x.detach().numpy(), str(x.dtype).replace("torch.", "").replace("ember.", "")


def same(fn, rtol=1e-6):
    """``fn(lib)`` equal (values, dtype, shape) under ember and torch; returns ember's result."""
    e, t = fn(ember), fn(torch)
    es, ts = (e, t) if isinstance(e, (tuple, list)) else ((e,), (t,))
    assert len(es) == len(ts)
    for a, b in zip(es, ts, strict=True):
        (an, ad), (bn, bd) = as_np(a), as_np(b)
        assert ad == bd, f"dtype {ad} != torch {bd}"
        assert an.shape == bn.shape, f"shape {an.shape} != torch {bn.shape}"
        np.testing.assert_allclose(an.astype(float), bn.astype(float), rtol=rtol, atol=1e-12, equal_nan=True)
    return e


def both_raise(fn, exc=RuntimeError):
    with pytest.raises(exc):
        fn(torch)
    with pytest.raises(exc) as info:
        fn(ember)
    return info


def grads(lib, fn, *values, upstream=None):
    """Gradients of ``fn(*xs)`` for leaf tensors made from ``values`` (explicit upstream: NaN-safe)."""
    xs = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in values]
    y = fn(*xs)
    g = lib.ones(y.shape, dtype=lib.float64) if upstream is None else lib.tensor(upstream, dtype=lib.float64)
    return tuple(lib.autograd.grad([y], xs, [g], allow_unused=True))


# -- bitwise ---------------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize(
    "expr",
    [
        lambda a, b: a & b,
        lambda a, b: a | b,
        lambda a, b: a ^ b,
        lambda a, b: ~a,
        lambda a, b: a & 6,
        lambda a, b: 6 | a,
        lambda a, b: 3 ^ b,
        lambda a, b: a << 2,
        lambda a, b: a >> 1,
        lambda a, b: 1 << b.abs(),
        lambda a, b: 64 >> b.abs(),
        lambda a, b: a << b.abs(),
    ],
)
def test_bitwise_on_integers(expr):
    same(lambda L: expr(L.tensor([5, -3, 12, 0]), L.tensor([3, 6, -10, 1])))
    same(lambda L: expr(L.tensor([5, 3, 12, 0], dtype=L.uint8), L.tensor([3, 6, 10, 1], dtype=L.uint8)))


@needs_torch
def test_bitwise_on_bools_stays_logical():
    for expr in (lambda a, b: a & b, lambda a, b: a | b, lambda a, b: a ^ b, lambda a, b: ~a, lambda a, b: a & True):
        same(lambda L, expr=expr: expr(L.tensor([True, False, True]), L.tensor([True, True, False])))
    same(lambda L: L.bitwise_and(L.tensor([12, 10]), L.tensor([10, 6])))


def test_bitwise_on_floats_raises():
    with pytest.raises(RuntimeError, match="bitwise_and"):
        ember.ones(2) & ember.ones(2)
    with pytest.raises(TypeError, match="bitwise_left_shift"):
        ember.tensor([1, 2]) << 1.5


# -- division ----------------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_div_rounding_keeps_integers(mode):
    same(lambda L: L.div(L.tensor([7, -7, 6, -1]), L.tensor([2, 2, -4, 3]), rounding_mode=mode))
    same(lambda L: L.div(L.tensor([7, -7]), 2, rounding_mode=mode))
    same(lambda L: L.div(L.tensor([7.5, -7.5]), 2, rounding_mode=mode))
    same(lambda L: L.div(L.tensor([7, -7], dtype=L.int32), 2.5, rounding_mode=mode))


@needs_torch
def test_rounding_ops_have_zero_gradients():
    for f in (
        lambda x: x.sign(),
        lambda x: x.floor(),
        lambda x: x.trunc(),
        lambda x: x.ceil(),
        lambda x: x.round(),
        lambda x: x.div(2.0, rounding_mode="floor"),
        lambda x: x.div(2.0, rounding_mode="trunc"),
    ):
        for L in (ember, torch):
            x = L.tensor([1.5, -2.0, 0.0], requires_grad=True)
            y = f(x)
            assert y.requires_grad and y.grad_fn is not None
            (g,) = L.autograd.grad([y], [x], [L.tensor([1.0, float("inf"), 2.0])])
            assert g.tolist() == [0.0, 0.0, 0.0]


# -- pow at the edges ----------------------------------------------------------------------------------
POW_CASES = [
    ([0.0, 0.0, 2.0, 0.0], [0.0, 1.0, 0.0, 2.5]),  # 0**0, 0**1, x**0, 0**positive
    ([float("inf"), -float("inf"), 0.0, 3.0], [0.0, 0.0, 0.0, -1.0]),  # x**0 at +-inf and 0
    ([-2.0, -2.0, -8.0], [0.5, 2.0, 1.0 / 3]),  # negative base, float exponent
    ([0.0, 0.0], [-1.0, -0.5]),  # 0 to a negative power
]


@needs_torch
@pytest.mark.parametrize("base,exp", POW_CASES)
def test_pow_gradients_at_the_edges(base, exp):
    same(lambda L: grads(L, lambda x, e: x**e, base, exp))


@needs_torch
@pytest.mark.parametrize("e", [0, 0.0, 1, 2, 0.5, -1, 3.0])
def test_pow_scalar_exponent_gradient(e):
    same(lambda L: grads(L, lambda x: x**e, [0.0, float("inf"), -float("inf"), -2.0, 3.0]))


@needs_torch
@pytest.mark.parametrize("base", [0.0, 2.0, -2.0, 1.0])
def test_pow_scalar_base_gradient(base):
    same(lambda L: grads(L, lambda e: base**e, [0.0, 1.0, -1.0, 2.5]))


# -- indexing -------------------------------------------------------------------------------------------
@needs_torch
def test_advanced_indexing_orders_dims_as_pytorch():
    x = np.arange(2 * 3 * 12 * 5 * 4, dtype=np.float64).reshape(2, 3, 12, 5, 4)
    same(lambda L: L.tensor(x)[1, :, 3:11:2, L.tensor([0, 2, 4]), 0:2])
    same(lambda L: L.tensor(x)[:, 1, :, L.tensor([0, 2]), L.tensor([1, 3])])
    same(lambda L: L.tensor(x)[L.tensor([1, 0]), :, 2, L.tensor([0, 2]), None])
    same(lambda L: L.tensor(x)[L.tensor(1), ..., L.tensor([1, 3])])
    same(lambda L: L.tensor(x)[..., 1, L.tensor([[0, 1], [2, 3]])])
    up = np.random.default_rng(0).standard_normal((3, 4, 3, 2))
    same(lambda L: grads(L, lambda t: t[1, :, 3:11:2, L.tensor([0, 2, 4]), 0:2], x, upstream=up[:, :, :, :]))


@needs_torch
def test_setitem_with_mixed_index():
    def f(L):
        t = L.zeros(2, 3, 4, 5, dtype=L.float64)
        t[1, :, L.tensor([0, 2])] = L.arange(30, dtype=L.float64).reshape(3, 2, 5)
        return t

    same(f)


@needs_torch
def test_nonzero_of_a_0d_tensor():
    same(lambda L: L.nonzero(L.tensor(3.0)))
    same(lambda L: L.nonzero(L.tensor(0.0)))
    same(lambda L: L.nonzero(L.tensor(2), as_tuple=True))


# -- losses ----------------------------------------------------------------------------------------------
@needs_torch
def test_nll_loss_none_keeps_the_target_shape():
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5))
    t = np.random.default_rng(2).integers(0, 3, (2, 4, 5))
    same(lambda L: F(L).nll_loss(L.tensor(x), L.tensor(t), reduction="none"))
    same(lambda L: F(L).cross_entropy(L.tensor(x), L.tensor(t), reduction="none"))
    same(lambda L: F(L).nll_loss(L.tensor(x[0, :, 0, 0]), L.tensor(1), reduction="none"))


@needs_torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_ignore_index_with_label_smoothing(reduction, weighted):
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((5, 4)), rng.uniform(0.5, 2, 4)
    t = np.array([0, 3, 2, 3, 1])

    def f(L):
        wt = L.tensor(w) if weighted else None
        loss = lambda v: F(L).cross_entropy(
            v, L.tensor(t), wt, ignore_index=3, reduction=reduction, label_smoothing=0.2
        )
        return (loss(L.tensor(x)),) + grads(L, loss, x)

    same(f)


def test_cross_entropy_rejects_a_column_target():
    info = both_raise(lambda L: F(L).cross_entropy(L.zeros(3, 4), L.zeros(3, 1, dtype=L.long))) if torch else None
    if info is not None:
        assert "cross_entropy" in str(info.value) or "nll_loss" in str(info.value)
    with pytest.raises(RuntimeError):
        F(ember).cross_entropy(ember.zeros(3, 4), ember.zeros(3, 1, dtype=ember.long))


# -- scans, resizing, padding, attention ---------------------------------------------------------------
@needs_torch
def test_logcumsumexp_is_stable_for_large_gaps():
    v = [0.0, 1000.0, -1000.0, 5.0, -float("inf"), 1e30]
    same(lambda L: L.logcumsumexp(L.tensor(v, dtype=L.float64), 0))
    same(lambda L: grads(L, lambda x: x.logcumsumexp(0), [0.0, 1000.0, -1000.0, 5.0], upstream=[1.0, -2.0, 3.0, 0.5]))


@needs_torch
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate_uint8_keeps_uint8(mode):
    x = np.arange(48, dtype=np.uint8).reshape(1, 3, 4, 4)
    same(lambda L: F(L).interpolate(L.tensor(x), scale_factor=2, mode=mode))
    same(lambda L: F(L).interpolate(L.tensor(x), size=(3, 5), mode=mode))


@needs_torch
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("widths", [(-2, 3), (2, -3), (-1, 3), (-1, -2), (1, -2, -1, 2)])
def test_pad_negative_widths(mode, widths):
    x = np.arange(2 * 6 * 7, dtype=np.float64).reshape((1, 2, 6, 7) if len(widths) == 4 else (2, 6, 7))
    same(lambda L: F(L).pad(L.tensor(x), widths, mode=mode))
    up = np.ones(tuple(F(torch).pad(torch.tensor(x), widths, mode=mode).shape))
    same(lambda L: grads(L, lambda t: F(L).pad(t, widths, mode=mode), x, upstream=up))


@needs_torch
def test_sdpa_with_grouped_query_attention():
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((2, 4, 3, 5)), rng.standard_normal((2, 2, 6, 5)), rng.standard_normal((2, 2, 6, 3))

    def f(L):
        fn = lambda a, b, c: F(L).scaled_dot_product_attention(a, b, c, enable_gqa=True)
        return (fn(L.tensor(q), L.tensor(k), L.tensor(v)),) + grads(L, fn, q, k, v)

    same(f)


# -- creation and views ----------------------------------------------------------------------------------
@needs_torch
def test_view_dtype():
    same(lambda L: L.tensor([1.0, -2.0, 0.5]).view(L.int32))
    same(lambda L: L.tensor([[1.0, 2.0]], dtype=L.float64).view(L.uint8))
    same(lambda L: L.tensor([[1, 2, 3, 4]], dtype=L.int16).view(L.int32))
    both_raise(lambda L: L.tensor([1, 2, 3], dtype=L.int16).view(L.int32))


def test_view_dtype_shares_storage():
    x = ember.tensor([1.0, 2.0])
    v = x.view(ember.int32)
    v[0] = 0
    assert x.tolist()[0] == 0.0


@needs_torch
def test_creation_keywords():
    for L in (ember, torch):
        assert tuple(L.empty(size=(2, 3)).shape) == (2, 3)
        assert tuple(L.zeros(size=(4,)).shape) == (4,)
        t = L.randint(0, 5, (3,), requires_grad=False)
        assert tuple(t.shape) == (3,) and not t.requires_grad
        assert tuple(L.randint(5, (2, 2)).shape) == (2, 2)
    both_raise(lambda L: L.linspace(0, 1, 5, dtype=L.bool))


# -- axis= aliases --------------------------------------------------------------------------------------
AXIS_METHODS = ["sum", "mean", "var", "std", "amax", "amin", "any", "all", "prod", "argmax", "argmin", "logsumexp",
                "cumsum", "count_nonzero", "softmax", "log_softmax", "nansum", "nanmean", "median", "max", "min",
                "cumprod", "logcumsumexp", "cummax", "cummin"]  # fmt: skip


@needs_torch
@pytest.mark.parametrize("name", AXIS_METHODS)
def test_axis_is_an_alias_of_dim(name):
    def f(L):
        r = getattr(L.arange(12.0).reshape(3, 4).sin(), name)(axis=1)
        return r[0] if isinstance(r, tuple) else r

    same(f)
    if name in ("sum", "mean", "amax", "any", "prod"):
        same(lambda L: getattr(L, name)(L.arange(12.0).reshape(3, 4), axis=0, keepdims=True))


# -- raise where PyTorch raises ----------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize(
    "bad",
    [
        lambda L: L.tensor(3.0).sum(1),
        lambda L: L.ones(2, 3).flip((0, 0)),
        lambda L: L.ones(2, 3).sum((1, 1)),
        lambda L: L.ones(2, 3).roll((1, 2)),
        lambda L: L.zeros(3).scatter(0, L.tensor([0]), L.ones(1, dtype=L.float64)),
        lambda L: L.zeros(3).scatter_add(0, L.tensor([0]), L.ones(1, dtype=L.float64)),
        lambda L: F(L).cross_entropy(L.zeros(3, 4), L.zeros(3, 1, dtype=L.long)),
    ],
)
def test_raises_where_pytorch_raises(bad):
    both_raise(bad, (RuntimeError, IndexError))


def test_0d_dims():
    x = ember.tensor(3.0)
    assert x.sum(0).item() == 3.0 and x.sum(-1).item() == 3.0
    with pytest.raises(IndexError, match="sum: dim 1"):
        x.sum(1)


@needs_torch
@pytest.mark.parametrize(
    "kw", [{"scale_factor": 1.7}, {"size": (5, 9)}, {"scale_factor": 0.6}, {"size": (5, 3), "align_corners": True}]
)
def test_interpolate_bilinear_uint8_keeps_uint8(kw):
    # PyTorch interpolates uint8 with fixed-point weights; Ember rounds the exact value half up: within 1
    x = np.random.default_rng(5).integers(0, 256, (1, 2, 6, 7)).astype(np.uint8)
    t = F(torch).interpolate(torch.tensor(x), mode="bilinear", **kw)
    e = F(ember).interpolate(ember.tensor(x), mode="bilinear", **kw)
    assert e.dtype == ember.uint8 and e.shape == tuple(t.shape)
    assert np.abs(e.numpy().astype(int) - t.numpy().astype(int)).max() <= 1
