"""The operators added for PyTorch programs (issue 30): float64 gradcheck and forward/backward parity with
PyTorch for the differentiable ones (``check_op``), value parity for the counting ones, and ``ember.masked``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.testing import check_op, torch_differentiates

torch = pytest.importorskip("torch")
rng = np.random.default_rng(30)


def r(*shape):
    return rng.standard_normal(shape)


def both(expr):
    """``expr(L, *tensors)`` evaluated with L = ember and with L = torch."""
    return (lambda *a: expr(ember, *a), lambda *a: expr(torch, *a))


def _xs(L, y):
    """Uneven sample points, in ``y``'s dtype."""
    return L.tensor([0.0, 0.5, 1.5, 2.0, 4.0], dtype=y.dtype)


IDX = {"i3": np.array([0, 2]), "rows": np.array([0, 0, 2]), "cols": np.array([1, 1, 3])}

CASES = {
    "slice_scatter": (lambda L, x, s: L.slice_scatter(x, s, 1, 0, 4, 2), [r(3, 4), r(3, 2)]),
    "select_scatter": (lambda L, x, s: L.select_scatter(x, s, 0, 1), [r(3, 4), r(4)]),
    "diagonal_scatter": (lambda L, x, s: L.diagonal_scatter(x, s, 1), [r(3, 4), r(3)]),
    "diagonal_scatter_neg": (lambda L, x, s: L.diagonal_scatter(x, s, -1, 1, 0), [r(3, 4), r(3)]),
    "as_strided": (lambda L, x: L.as_strided(x, (2, 2), (1, 2), 1), [r(3, 4)]),
    "as_strided_overlapping": (lambda L, x: L.as_strided(x, (3, 3), (1, 1)), [r(3, 4)]),
    "index_put": (lambda L, x, v: L.index_put(x, (L.tensor([0, 1, 2]), L.tensor(IDX["cols"])), v), [r(3, 4), r(3)]),
    "index_put_acc": (lambda L, x, v: L.index_put(x, (L.tensor(IDX["rows"]), L.tensor(IDX["cols"])), v, True),
                      [r(3, 4), r(3)]),
    "put": (lambda L, x, s: L.put(x, L.tensor([0, -1, 3]), s), [r(3, 4), r(3)]),
    "put_acc": (lambda L, x, s: x.put(L.tensor([0, 0, 3]), s, accumulate=True), [r(3, 4), r(3)]),
    "index_reduce_prod": (lambda L, x, s: x.index_reduce(0, L.tensor(IDX["rows"]), s, "prod"), [r(3, 4), r(3, 4)]),
    "index_reduce_mean": (lambda L, x, s: x.index_reduce(0, L.tensor(IDX["rows"]), s, "mean", include_self=False),
                          [r(3, 4), r(3, 4)]),
    "index_reduce_amax": (lambda L, x, s: x.index_reduce(1, L.tensor([1, 0, 1]), s, "amax"), [r(2, 3), r(2, 3)]),
    "split_with_sizes": (lambda L, x: L.split_with_sizes(x, [1, 3], 1), [r(3, 4)]),
    "narrow_copy": (lambda L, x: L.narrow_copy(x, 1, 1, 2), [r(3, 4)]),
    "slice_copy": (lambda L, x: L.slice_copy(x, 1, 1, 4, 2), [r(3, 4)]),
    "diagonal_copy": (lambda L, x: L.diagonal_copy(x, 1), [r(3, 4)]),
    "expand_copy": (lambda L, x: L.expand_copy(x, (2, 3, 4)), [r(3, 4)]),
    "permute_copy": (lambda L, x: L.permute_copy(x, (1, 0)), [r(3, 4)]),
    "t_copy": (lambda L, x: L.t_copy(x), [r(3, 4)]),
    "transpose_copy": (lambda L, x: L.transpose_copy(x, 0, 1), [r(3, 4)]),
    "select_copy": (lambda L, x: L.select_copy(x, 1, 2), [r(3, 4)]),
    "squeeze_copy": (lambda L, x: L.squeeze_copy(x.unsqueeze(1)), [r(3, 4)]),
    "unsqueeze_copy": (lambda L, x: L.unsqueeze_copy(x, 2), [r(3, 4)]),
    "view_copy": (lambda L, x: L.view_copy(x, (4, 3)), [r(3, 4)]),
    "unfold_copy": (lambda L, x: L.unfold_copy(x, 1, 2, 1), [r(3, 4)]),
    "unbind_copy": (lambda L, x: L.unbind_copy(x, 1), [r(3, 4)]),
    "split_copy": (lambda L, x: L.split_copy(x, 2, 1), [r(3, 4)]),
    "split_with_sizes_copy": (lambda L, x: L.split_with_sizes_copy(x, [3, 1], 1), [r(3, 4)]),
    "as_strided_copy": (lambda L, x: L.as_strided_copy(x, (2, 2), (1, 2), 1), [r(3, 4)]),
    "alias_copy": (lambda L, x: L.alias_copy(x), [r(3, 4)]),
    "sum_to_size": (lambda L, x: x.sum_to_size(3, 1), [r(2, 3, 4)]),
    "combinations": (lambda L, x: L.combinations(x, 2), [r(4)]),
    "combinations_repl": (lambda L, x: L.combinations(x, 3, with_replacement=True), [r(3)]),
    "cumulative_trapezoid": (lambda L, y: L.cumulative_trapezoid(y, dx=0.5), [r(3, 5)]),
    "cumulative_trapezoid_x": (lambda L, y: L.cumulative_trapezoid(y, _xs(L, y)), [r(3, 5)]),
    "gradient": (lambda L, y: L.gradient(y, spacing=0.5), [r(4, 5)]),
    "gradient_edge2_dim": (lambda L, y: L.gradient(y, dim=1, edge_order=2), [r(4, 5)]),
    "gradient_coords": (lambda L, y: L.gradient(y, spacing=(_xs(L, y),), dim=1), [r(4, 5)]),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_op_matches_torch(name):
    expr, args = CASES[name]
    ours, theirs = both(expr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch calls index_reduce "beta"
        check_op(ours, *args, torch_fn=theirs, name=name, grad=name not in _NEWER_GRADS or torch_differentiates(expr))


_NEWER_GRADS = {"narrow_copy"}  # differentiable in torch 2.13, not in 2.11: values only where torch cannot


def test_as_strided_scatter_values_as_torch_and_the_true_gradient():
    x, s = r(3, 4), r(2, 2)
    got = ember.as_strided_scatter(ember.tensor(x), ember.tensor(s), (2, 2), (1, 2), 1)
    want = torch.as_strided_scatter(torch.tensor(x), torch.tensor(s), (2, 2), (1, 2), 1)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    # PyTorch's input gradient here is the scattered positions'; the derivative of the result is the others'
    from ember.autograd import gradcheck

    assert gradcheck(lambda a, b: ember.as_strided_scatter(a, b, (2, 2), (1, 2), 1),
                     (ember.tensor(x, requires_grad=True), ember.tensor(s, requires_grad=True)))  # fmt: skip


def test_counting_ops_match_torch():
    x = np.array([[1.0, 2, 2, 3, 3, 3, 1], [5, 2, 2, 3, 3, 3, 1]])
    for keepdim in (False, True):
        a, b = ember.mode(ember.tensor(x), 1, keepdim), torch.mode(torch.tensor(x), 1, keepdim)
        assert a.values.tolist() == b.values.tolist() and a.indices.tolist() == b.indices.tolist()
    assert ember.mode(ember.tensor([3.0, 1, 1, 3])).indices.item() == torch.mode(torch.tensor([3.0, 1, 1, 3])).indices
    v = np.array([8.0, 0.3, -5, 0, 1e-30])
    m, e = ember.frexp(ember.tensor(v)), torch.frexp(torch.tensor(v))
    assert m.mantissa.tolist() == e.mantissa.tolist() and m.exponent.tolist() == e.exponent.tolist()
    assert m.exponent.dtype == ember.int32
    data, w = r(40), np.abs(r(40))
    for kw in ({}, {"range": (-1.0, 1.0)}, {"density": True}):
        h, t = ember.histogram(ember.tensor(data), 7, **kw), torch.histogram(torch.tensor(data), 7, **kw)
        np.testing.assert_allclose(h.hist.numpy(), t.hist.numpy())
        np.testing.assert_allclose(h.bin_edges.numpy(), t.bin_edges.numpy())
    edges = np.array([-2.0, -0.5, 0.0, 1.0, 3.0])
    h = ember.histogram(ember.tensor(data), ember.tensor(edges), weight=ember.tensor(w), density=True)
    t = torch.histogram(torch.tensor(data), torch.tensor(edges), weight=torch.tensor(w), density=True)
    np.testing.assert_allclose(h.hist.numpy(), t.hist.numpy())
    pts = rng.random((60, 3))
    h, t = ember.histogramdd(ember.tensor(pts), [3, 2, 4]), torch.histogramdd(torch.tensor(pts), [3, 2, 4])
    np.testing.assert_allclose(h.hist.numpy(), t.hist.numpy())
    for idx, shape in (([4, 7, -1], (2, 4)), ([0, 5, 11], (3, 4)), (7, 8)):
        got = ember.unravel_index(ember.tensor(idx), shape)
        want = torch.unravel_index(torch.tensor(idx), shape)
        assert [g.tolist() for g in got] == [w.tolist() for w in want]


MASKED = ["sum", "prod", "amax", "amin", "mean", "var", "std", "norm", "logsumexp", "softmax", "log_softmax",
          "softmin", "normalize", "argmax", "argmin", "median", "cumsum", "cumprod"]  # fmt: skip


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch.masked calls itself a prototype
@pytest.mark.parametrize("name", MASKED)
def test_masked_matches_torch(name):
    x = np.array([[1.0, 2, 3], [4, 5, 6], [7, -1, 2]])
    m = np.array([[True, False, True], [False, False, False], [True, True, True]])

    def call(L):
        fn, t, mask = getattr(L.masked, name), L.tensor(x, requires_grad=name not in ("argmax", "argmin")), L.tensor(m)
        if name in ("norm", "normalize"):
            out = fn(t, 2.0, dim=1, mask=mask)
        elif name in ("var", "std"):
            out = fn(t, dim=1, unbiased=False, mask=mask)
        else:
            out = fn(t, dim=1, mask=mask)
        if t.requires_grad:
            L.where(L.isfinite(out), out, 0.0).sum().backward()
        return out.detach().numpy(), None if t.grad is None else t.grad.numpy()

    (a, ga), (b, gb) = call(ember), call(torch)
    np.testing.assert_allclose(a, b, rtol=1e-6, equal_nan=True)
    if gb is not None:
        np.testing.assert_allclose(np.nan_to_num(ga), np.nan_to_num(gb), rtol=1e-6, atol=1e-12)


def test_tensor_surface_methods():
    x = ember.randn(2, 3, 4)
    assert x.byte().dtype == ember.uint8 and x.char().dtype == ember.int8 and x.short().dtype == ember.int16
    assert x[0].H.shape == (4, 3) and x.mH.shape == (2, 4, 3) and x.nelement() == 24
    e = x.new_empty_strided((2, 3), (1, 2))
    assert e.shape == (2, 3) and e.stride() == torch.empty(4, 4).new_empty_strided((2, 3), (1, 2)).stride()
    for fmt in (ember.contiguous_format, ember.preserve_format, ember.channels_last):
        assert x.unsqueeze(0).contiguous(memory_format=fmt).shape == (1, 2, 3, 4)
        assert x.to(memory_format=fmt).float(memory_format=fmt).clone(memory_format=fmt).shape == (2, 3, 4)
