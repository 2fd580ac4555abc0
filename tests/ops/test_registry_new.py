"""Registry cases for the operators added for PyTorch parity (issue 14): gradcheck in float64 and
forward/backward parity with PyTorch in float32 and float64 through ``check_op``; ``NONFINITE`` cases
feed NaN and infinities and compare values and gradients with PyTorch's (no finite differences)."""

import numpy as np
import pytest

import ember
from ember.testing import check_op, torch_differentiates

rng = np.random.default_rng(14)


def r(*shape):
    return rng.standard_normal(shape)


def u(lo, hi, *shape):
    return rng.uniform(lo, hi, shape)


def T():
    return __import__("torch")


def both(label, fn, args, **kw):
    """``fn(lib, *tensors)`` with ``lib`` = ember and torch."""
    return (label, lambda *a: fn(ember, *a), lambda *a: fn(T(), *a), args, kw)


def tup(x):
    return tuple(x)


def with_nan(x, *where):
    x = x.copy()
    for i, v in enumerate((np.nan, np.inf, -np.inf)):
        if i < len(where):
            x[where[i]] = v
    return x


CASES = [
    # pointwise
    both("copysign", lambda L, a, b: L.copysign(a, b), [r(3, 4), r(4)]),
    both("copysign_scalar", lambda L, a: a.copysign(-1.0), [r(5)]),
    both("fmod", lambda L, a, b: L.fmod(a, b), [r(3, 4) * 3, u(0.5, 2, 4) * np.array([1, -1, 1, -1])]),
    both("fmod_scalar", lambda L, a: a.fmod(-1.5), [r(6) * 3]),
    both("logaddexp", lambda L, a, b: L.logaddexp(a, b), [r(3, 1), r(4)], second_order=True),
    both("logaddexp2", lambda L, a, b: a.logaddexp2(b), [r(3, 4), r(3, 4)]),
    both("hypot", lambda L, a, b: L.hypot(a, b), [r(3, 4), r(4)]),
    both("xlogy", lambda L, a, b: L.xlogy(a, b), [r(3, 4), u(0.5, 2, 3, 4)]),
    both("float_power", lambda L, a, b: L.float_power(a, b), [u(0.5, 2, 4), r(4)]),
    both("float_power_scalar", lambda L, a: a.float_power(2), [r(4)]),
    both("fmax", lambda L, a, b: L.fmax(a, b), [r(3, 4), r(4)]),
    both("fmin", lambda L, a, b: a.fmin(b), [r(3, 4), r(3, 4)]),
    both("ldexp", lambda L, a: L.ldexp(a, L.tensor([1.0, -2.0, 3.0], dtype=a.dtype)), [r(2, 3)]),
    both("sinc", lambda L, a: L.sinc(a), [np.array([0.0, 0.3, -1.2, 2.5])]),
    both("deg2rad", lambda L, a: a.deg2rad(), [r(4) * 90]),
    both("rad2deg", lambda L, a: L.rad2deg(a), [r(4)]),
    both("clamp_min", lambda L, a: a.clamp_min(0.1), [r(5)]),
    both("clamp_max", lambda L, a: L.clamp_max(a, 0.1), [r(5)]),
    both("rsub", lambda L, a, b: L.rsub(a, b, alpha=2), [r(3), r(3)]),
    both("arctan", lambda L, a: a.arctan(), [r(4)]),
    both("arcsinh", lambda L, a: L.arcsinh(a), [r(4)]),
    both("sgn", lambda L, a: a.sgn(), [r(4)]),
    both("fix", lambda L, a: L.fix(a), [r(4) * 3]),
    both("absolute", lambda L, a: a.absolute(), [r(4)]),
    both("positive", lambda L, a: L.positive(a), [r(4)]),
    # scans
    both("cummax", lambda L, x: tup(x.cummax(1)), [r(3, 6)]),
    both("cummin", lambda L, x: tup(L.cummin(x, 0)), [r(5, 3)]),
    both("logcumsumexp", lambda L, x: x.logcumsumexp(1), [r(3, 7)], second_order=True),
    both("logcumsumexp_gap", lambda L, x: x.logcumsumexp(0), [np.array([0.0, 80.0, -80.0, 3.0])]),
    # order statistics and NaN-aware reductions
    both("nansum", lambda L, x: x.nansum(1), [r(4, 5)]),
    both("nanmean", lambda L, x: L.nanmean(x, 0, keepdim=True), [r(4, 5)]),
    both("median_all", lambda L, x: x.median(), [r(4, 5)]),
    both("median_dim", lambda L, x: tup(x.median(1)), [r(4, 5)]),
    both("nanmedian_dim", lambda L, x: tup(x.nanmedian(0, keepdim=True)), [r(4, 5)]),
    both("kthvalue", lambda L, x: tup(x.kthvalue(2, 1)), [r(4, 5)]),
    both("aminmax", lambda L, x: tup(L.aminmax(x, dim=0)), [r(4, 5)],
         **({} if torch_differentiates(lambda L, x: L.aminmax(x, dim=0)) else {"grad": False})),
    both("quantile", lambda L, x: x.quantile(0.3, dim=1), [r(4, 5)]),
    both("quantile_q", lambda L, x: x.quantile(L.tensor([0.1, 0.5, 1.0], dtype=x.dtype), dim=0, keepdim=True),
         [r(4, 5)]),
    both("quantile_all", lambda L, x: L.quantile(x, 0.75), [r(4, 5)]),
    both("nanquantile", lambda L, x: x.nanquantile(0.7, 1, interpolation="midpoint"), [r(4, 5)]),
    both("quantile_nearest", lambda L, x: x.quantile(0.4, 1, interpolation="nearest"), [r(4, 5)]),
    both("quantile_lower", lambda L, x: x.quantile(0.45, 1, interpolation="lower"), [r(4, 5)]),
    both("quantile_higher", lambda L, x: x.quantile(0.45, 1, interpolation="higher"), [r(4, 5)]),
    # layout
    both("repeat_interleave", lambda L, x: x.repeat_interleave(2, 1), [r(2, 3)]),
    both("repeat_interleave_flat", lambda L, x: L.repeat_interleave(x, 3), [r(2, 2)]),
    both("repeat_interleave_t", lambda L, x: x.repeat_interleave(L.tensor([1, 0, 3]), dim=0), [r(3, 2)]),
    both("meshgrid_ij", lambda L, a, b: L.meshgrid(a, b, indexing="ij"), [r(3), r(4)]),
    both("meshgrid_xy", lambda L, a, b, c: L.meshgrid(a, b, c, indexing="xy"), [r(3), r(4), r(2)]),
    both("cartesian_prod", lambda L, a, b: L.cartesian_prod(a, b), [r(3), r(2)]),
    both("tensor_unfold", lambda L, x: x.unfold(1, 3, 2), [r(2, 8, 3)]),
    both("tensor_unfold_last", lambda L, x: x.unfold(-1, 2, 1), [r(3, 4)]),
    both("rot90", lambda L, x: x.rot90(1, (0, 2)), [r(2, 4, 3)]),
    both("rot90_k3", lambda L, x: L.rot90(x, 3), [r(2, 4, 3)]),
    both("rot90_neg", lambda L, x: x.rot90(-2, (1, 0)), [r(2, 4)]),
    both("view_as", lambda L, x, y: x.view_as(y), [r(2, 6), r(3, 4)]),
    both("reshape_as", lambda L, x, y: x.t().reshape_as(y), [r(2, 6), r(3, 4)]),
    # 3-d convolution/pooling and unpooling
    both("conv_transpose3d", lambda L, x, w, b: L.nn.functional.conv_transpose3d(x, w, b, stride=2, padding=1,
         output_padding=1), [r(1, 2, 3, 3, 2), r(2, 3, 2, 3, 2), r(3)]),
    both("conv_transpose3d_groups", lambda L, x, w: L.nn.functional.conv_transpose3d(x, w, groups=2, dilation=2),
         [r(1, 4, 2, 3, 2), r(4, 1, 2, 2, 2)]),
    both("max_pool3d", lambda L, x: L.nn.functional.max_pool3d(x, 2, stride=1, padding=1), [r(1, 2, 3, 4, 3)]),
    both("max_pool3d_idx", lambda L, x: tup(L.nn.functional.max_pool3d(x, 2, return_indices=True)),
         [r(1, 2, 4, 4, 4)]),
    both("avg_pool3d", lambda L, x: L.nn.functional.avg_pool3d(x, 3, stride=2, padding=1, ceil_mode=True,
         count_include_pad=False), [r(2, 2, 5, 4, 5)]),
    both("max_unpool1d", lambda L, x: L.nn.functional.max_unpool1d(*L.nn.functional.max_pool1d(
         x, 2, return_indices=True), 2), [r(2, 3, 8)]),
    both("max_unpool2d", lambda L, x: L.nn.functional.max_unpool2d(*L.nn.functional.max_pool2d(
         x, 2, return_indices=True), 2, output_size=(5, 7)), [r(2, 3, 5, 7)]),
    both("max_unpool2d_pad", lambda L, x: L.nn.MaxUnpool2d(2, stride=2, padding=1)(*L.nn.functional.max_pool2d(
         x, 2, 2, 1, return_indices=True), output_size=(7, 6)), [r(1, 2, 7, 6)]),
    both("max_unpool3d", lambda L, x: L.nn.functional.max_unpool3d(*L.nn.functional.max_pool3d(
         x, 2, return_indices=True), 2), [r(1, 2, 4, 4, 2)]),
    both("MaxPool3d", lambda L, x: L.nn.MaxPool3d(2, stride=1)(x), [r(1, 1, 3, 3, 3)]),
    both("AvgPool3d", lambda L, x: L.nn.AvgPool3d(2)(x), [r(1, 2, 4, 2, 4)]),
    # softmin
    both("softmin", lambda L, x: L.nn.functional.softmin(x, 1), [r(3, 5)]),
    both("Softmin", lambda L, x: L.nn.Softmin(dim=0)(x), [r(3, 5)]),
    # gqa attention, nll with multi-dim target, smoothing with ignore_index
    both("sdpa_gqa", lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True),
         [r(1, 4, 3, 5), r(1, 2, 6, 5), r(1, 2, 6, 3)]),
    both("nll_none_nd", lambda L, x, t: L.nn.functional.nll_loss(x, t, reduction="none"),
         [r(2, 3, 4), rng.integers(0, 3, (2, 4))]),
    both("ce_ignore_smooth", lambda L, x, t: L.nn.functional.cross_entropy(x, t, ignore_index=2, label_smoothing=0.1),
         [r(5, 4), np.array([0, 2, 3, 2, 1])]),
    both("ce_ignore_smooth_nd", lambda L, x, t: L.nn.functional.cross_entropy(x, t, label_smoothing=0.3),
         [r(2, 4, 3), np.array([[0, -100, 3], [2, 1, -100]])]),
    # pow at the edges (finite inputs; the infinite ones are below)
    both("pow_zero_base", lambda L, x, e: x**e, [np.array([0.0, 0.0, 2.0, 1.5]), np.array([0.0, 2.0, 0.0, 1.5])],
         finite_differences=False),
    both("pow_scalar_zero", lambda L, x: x**0, [r(4)]),
    both("pow_neg_base", lambda L, x: x**3.0, [np.array([-2.0, -0.5, 1.5])]),
    # pad with negative widths
    both("pad_reflect_neg", lambda L, x: L.nn.functional.pad(x, (-1, 2), mode="reflect"), [r(2, 3, 6)]),
    both("pad_circular_neg", lambda L, x: L.nn.functional.pad(x, (2, -1, -1, 1), mode="circular"), [r(1, 2, 4, 5)]),
    both("pad_replicate_neg", lambda L, x: L.nn.functional.pad(x, (-2, 1), mode="replicate"), [r(2, 3, 6)]),
    # advanced indexing that mixes ints, slices and index tensors
    both("getitem_mixed", lambda L, x: x[1, :, 1:5:2, L.tensor([0, 2, 2])], [r(2, 3, 6, 4)]),
    both("getitem_mixed2", lambda L, x: x[L.tensor([1, 0]), 2, :, L.tensor([3, 1])], [r(2, 3, 5, 4)]),
]  # fmt: skip

NONFINITE = [
    both("nan_copysign", lambda L, a, b: L.copysign(a, b), [np.array([1.0, np.nan, np.inf, 0.0, -2.0]),
                                                          np.array([-1.0, 1.0, -np.inf, np.nan, -0.0])]),
    both("nan_fmod", lambda L, a, b: L.fmod(a, b), [np.array([1.0, np.nan, np.inf, 5.0, -2.0]),
                                                  np.array([2.0, 1.0, 3.0, np.inf, 0.7])]),
    both("inf_logaddexp", lambda L, a, b: L.logaddexp(a, b), [np.array([np.inf, -np.inf, np.nan, 1.0, np.inf]),
                                                            np.array([1.0, 2.0, 0.0, -np.inf, -np.inf])]),
    both("inf_logaddexp2", lambda L, a, b: L.logaddexp2(a, b), [np.array([np.inf, -np.inf, 3.0]),
                                                              np.array([1.0, 2.0, -np.inf])]),
    both("inf_hypot", lambda L, a, b: L.hypot(a, b), [np.array([np.inf, 3.0, np.nan]), np.array([1.0, -np.inf, 0.0])]),
    both("xlogy_zero", lambda L, a, b: L.xlogy(a, b), [np.array([0.0, 0.0, 2.0, 0.0, 1.0]),
                                                     np.array([0.0, -1.0, 0.0, np.nan, np.inf])]),
    both("nan_fmax", lambda L, a, b: L.fmax(a, b), [np.array([np.nan, 1.0, np.nan, 2.0, -np.inf]),
                                                  np.array([1.0, np.nan, np.nan, 2.0, 0.0])]),
    both("nan_fmin", lambda L, a, b: L.fmin(a, b), [np.array([np.nan, 1.0, np.nan, 2.0, np.inf]),
                                                  np.array([1.0, np.nan, np.nan, 2.0, 0.0])]),
    both("inf_sinc", lambda L, a: L.sinc(a), [np.array([np.inf, 0.0, np.nan, 1.0])]),
    both("nan_cummax", lambda L, x: tup(x.cummax(1)), [with_nan(r(2, 6), (0, 2), (1, 1), (1, 4))]),
    both("nan_cummin", lambda L, x: tup(x.cummin(1)), [with_nan(r(2, 6), (0, 3), (1, 0), (0, 5))]),
    both("inf_logcumsumexp", lambda L, x: x.logcumsumexp(1), [with_nan(r(2, 5), (0, 4), (1, 2), (0, 0))]),
    both("nan_nansum", lambda L, x: x.nansum(1), [with_nan(r(3, 4), (0, 1), (2, 2))]),
    both("nan_nanmean", lambda L, x: x.nanmean(0), [with_nan(r(3, 4), (0, 1), (2, 2))]),
    both("nan_median_all", lambda L, x: x.median(), [with_nan(r(3, 4), (1, 1))]),
    both("nan_median_dim", lambda L, x: x.median(1).values, [with_nan(r(3, 4), (1, 1), (2, 0))]),
    both("nan_nanmedian", lambda L, x: x.nanmedian(), [with_nan(r(3, 4), (1, 1), (2, 0))]),
    both("nan_nanmedian_dim", lambda L, x: x.nanmedian(1).values, [with_nan(r(3, 4), (1, 1), (2, 0))]),
    both("nan_quantile", lambda L, x: x.quantile(0.3, 1), [with_nan(r(3, 4), (1, 1), (2, 0))]),
    both("nan_nanquantile", lambda L, x: x.nanquantile(0.6, 1), [with_nan(r(3, 4), (1, 1), (2, 0))]),
    both("inf_pow", lambda L, x, e: x**e, [np.array([np.inf, -np.inf, 0.0, -2.0, 0.0]),
                                         np.array([0.0, 0.0, 0.0, 0.5, -1.0])]),
    both("inf_pow_scalar", lambda L, x: x**0.5, [np.array([np.inf, -np.inf, 0.0, -2.0, 4.0])]),
    both("inf_pow_zero", lambda L, x: x**0, [np.array([np.inf, -np.inf, 0.0, np.nan])]),
    both("inf_rpow", lambda L, e: 2.0**e, [np.array([np.inf, -np.inf, 0.0, np.nan])]),
    both("inf_sign", lambda L, x: x.sign(), [np.array([np.inf, -np.inf, 0.0, np.nan, -1.0])]),
    both("nan_softmin", lambda L, x: L.nn.functional.softmin(x, 1), [with_nan(r(2, 3), (0, 1))]),
    both("inf_softmin", lambda L, x: L.nn.functional.softmin(x, 1), [np.array([[np.inf, 0.0, 1.0], [2.0, 1.0, -1.0]])]),
]  # fmt: skip


@pytest.mark.parametrize("name,fn,tfn,args,kw", CASES, ids=[c[0] for c in CASES])
def test_op(name, fn, tfn, args, kw):
    check_op(fn, *args, torch_fn=tfn, name=name, **kw)


@pytest.mark.parametrize("name,fn,tfn,args,kw", NONFINITE, ids=[c[0] for c in NONFINITE])
def test_nonfinite(name, fn, tfn, args, kw):
    check_op(fn, *args, torch_fn=tfn, name=name, finite_differences=False, **kw)


def test_multinomial_draws_follow_the_weights():
    ember.manual_seed(0)
    w = ember.tensor([[1.0, 0.0, 3.0, 6.0], [5.0, 5.0, 0.0, 0.0]])
    draws = ember.multinomial(w, 4000, replacement=True)
    assert draws.shape == (2, 4000) and draws.dtype == ember.int64
    freq = np.stack([np.bincount(row, minlength=4) / 4000 for row in draws.numpy()])
    np.testing.assert_allclose(freq, (w / w.sum(1, keepdim=True)).numpy(), atol=0.03)
    ember.manual_seed(1)
    a = w.multinomial(2)
    ember.manual_seed(1)
    assert a.tolist() == w.multinomial(2).tolist()  # seeded
    for _ in range(20):
        row = ember.multinomial(ember.tensor([1.0, 0.0, 3.0, 6.0]), 3).tolist()
        assert len(set(row)) == 3 and 1 not in row  # no repeats, weight 0 never drawn
    with pytest.raises(RuntimeError, match="multinomial"):
        ember.multinomial(ember.tensor([1.0, 0.0]), 2)
    with pytest.raises(ValueError, match="multinomial"):
        ember.multinomial(ember.tensor([1.0, -1.0]), 1)


def test_multinomial_without_replacement_matches_sequential_draws():
    # P(first draw = i) = w_i / sum(w): the Gumbel top-k draw has the sequential scheme's marginals
    ember.manual_seed(3)
    w = ember.tensor([1.0, 2.0, 7.0])
    first = np.array([ember.multinomial(w, 2)[0].item() for _ in range(3000)])
    np.testing.assert_allclose(np.bincount(first, minlength=3) / 3000, [0.1, 0.2, 0.7], atol=0.03)


def test_bernoulli():
    ember.manual_seed(0)
    p = ember.full((20000,), 0.3)
    x = ember.bernoulli(p)
    assert x.dtype == ember.float32 and set(np.unique(x.numpy())) <= {0.0, 1.0}
    assert abs(x.mean().item() - 0.3) < 0.02
    assert abs(p.bernoulli(0.8).mean().item() - 0.8) < 0.02
