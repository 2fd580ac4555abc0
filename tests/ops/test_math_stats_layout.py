"""Elementwise math, statistics and layout operators: gradcheck + PyTorch parity through ``check_op``."""

import numpy as np
import pytest

import ember
from ember.testing import check_op, torch_or_none

rng = np.random.default_rng(1)


def r(*shape):
    return rng.standard_normal(shape)


def u(lo, hi, *shape):
    return rng.uniform(lo, hi, shape)


def same(name, *args, **kw):
    """A case calling ``ember.<name>`` and ``torch.<name>`` with the same arguments."""
    return (
        name,
        lambda *t: getattr(ember, name)(*t, **kw),
        lambda *t: getattr(__import__("torch"), name)(*t, **kw),
        list(args),
    )


def method(label, name, args, *margs, **kw):
    """A case calling the Tensor method ``name`` on both sides."""
    return (
        label,
        lambda x, *t: getattr(x, name)(*t, *margs, **kw),
        lambda x, *t: getattr(x, name)(*t, *margs, **kw),
        args,
    )


UNARY = [
    same("reciprocal", u(0.5, 2, 4)),
    same("square", r(4)),
    same("rsqrt", u(0.5, 2, 4)),
    same("exp2", r(4)),
    same("expm1", r(4)),
    same("log2", u(0.5, 2, 4)),
    same("log10", u(0.5, 2, 4)),
    same("log1p", u(-0.5, 2, 4)),
    same("sin", r(4)),
    same("cos", r(4)),
    same("tan", u(-1, 1, 4)),
    same("asin", u(-0.9, 0.9, 4)),
    same("acos", u(-0.9, 0.9, 4)),
    same("atan", r(4)),
    same("sinh", r(4)),
    same("cosh", r(4)),
    same("asinh", r(4)),
    same("acosh", u(1.2, 3, 4)),
    same("atanh", u(-0.9, 0.9, 4)),
    same("erf", r(4)),
    same("erfc", r(4)),
    same("erfinv", u(-0.9, 0.9, 4)),
    same("frac", u(0.1, 0.9, 4) + np.array([-2, -1, 0, 3])),
    same("logit", u(0.1, 0.9, 4)),
    same("logit", u(0.1, 0.9, 4), eps=0.2),
    same("round", u(-3, 3, 5) + 0.05),
    same("round", u(-3, 3, 5), decimals=1),
    same("ceil", u(-3, 3, 5) + 0.05),
]
BINARY = [
    same("atan2", r(3, 1), r(4)),
    same("lerp", r(3), r(3), r(3)),
    same("lerp", r(2, 3), r(3), weight=0.3),
    ("addcmul", lambda a, b, c: ember.addcmul(a, b, c, value=0.5), lambda a, b, c: a.addcmul(b, c, value=0.5),
     [r(3), r(2, 3), r(3)]),
    ("addcdiv", lambda a, b, c: ember.addcdiv(a, b, c, value=2), lambda a, b, c: a.addcdiv(b, c, value=2),
     [r(3), r(3), u(0.5, 2, 3)]),
]  # fmt: skip
STATS = [
    method("var", "var", [r(3, 4)], 1),
    method("var_all", "var", [r(3, 4)]),
    method("var_c0", "var", [r(3, 4)], 0, correction=0, keepdim=True),
    method("std", "std", [r(3, 4)], (0, 1)),
    ("var_mean", lambda x: tuple(ember.var_mean(x, 1)), lambda x: tuple(__import__("torch").var_mean(x, 1)),
     [r(3, 4)]),
    ("std_mean", lambda x: tuple(ember.std_mean(x, 0)), lambda x: tuple(__import__("torch").std_mean(x, 0)),
     [r(3, 4)]),
    method("logsumexp", "logsumexp", [r(3, 4)], 1),
    method("logsumexp_keep", "logsumexp", [r(2, 3, 4)], (0, 2), keepdim=True),
    method("norm", "norm", [r(3, 4)]),
    method("norm_dim", "norm", [r(3, 4)], dim=1),
    method("norm_p1", "norm", [r(3, 4)], p=1, dim=0),
    method("norm_p3", "norm", [r(3, 4)], p=3),
    method("norm_inf", "norm", [r(3, 4)], p=float("inf"), dim=1),
    method("cumsum", "cumsum", [r(3, 4)], 1),
    method("cumprod", "cumprod", [u(0.5, 2, 3, 4)], 0),
    ("cumprod_zero", lambda x: x.cumprod(0), lambda x: x.cumprod(0), [np.array([2.0, 0.0, 3.0, 0.5])]),
    method("logcumsumexp", "logcumsumexp", [r(3, 4)], 1),
    method("prod", "prod", [u(0.5, 2, 3, 4)]),
    method("prod_dim", "prod", [u(0.5, 2, 3, 4)], 1, keepdim=True),
    ("prod_zero", lambda x: x.prod(0), lambda x: x.prod(0), [np.array([[2.0, 1.5], [0.0, 3.0], [4.0, 0.5]])]),
]  # fmt: skip
LAYOUT = [
    method("movedim", "movedim", [r(2, 3, 4)], 0, 2),
    method("movedim_multi", "movedim", [r(2, 3, 4)], (0, 1), (2, 0)),
    method("unflatten", "unflatten", [r(2, 12)], 1, (3, -1)),
    method("repeat", "repeat", [r(2, 3)], 2, 1, 2),
    method("tile", "tile", [r(2, 3)], (2,)),
    method("flip", "flip", [r(2, 3, 4)], (0, 2)),
    method("fliplr", "fliplr", [r(2, 3)]),
    method("flipud", "flipud", [r(2, 3)]),
    method("roll", "roll", [r(3, 4)], 1, 1),
    method("roll_multi", "roll", [r(3, 4)], (1, -2), (0, 1)),
    method("roll_flat", "roll", [r(3, 4)], 5),
    method("narrow", "narrow", [r(3, 5)], 1, 1, 3),
    method("tril", "tril", [r(4, 5)]),
    method("triu", "triu", [r(2, 4, 5)], 1),
    method("tril_neg", "tril", [r(4, 5)], -1),
    method("diagonal", "diagonal", [r(4, 5)]),
    method("diagonal_off", "diagonal", [r(2, 4, 5)], 1, 1, 2),
    method("diagonal_neg", "diagonal", [r(4, 5, 3)], -1, 0, 1),
    method("diag_vec", "diag", [r(4)], 1),
    method("diag_mat", "diag", [r(4, 3)], -1),
    method("diag_embed", "diag_embed", [r(2, 3)]),
]
CASES = UNARY + BINARY + STATS + LAYOUT


@pytest.mark.parametrize("name,fn,tfn,args", CASES, ids=[c[0] for c in CASES])
def test_op(name, fn, tfn, args):
    check_op(fn, *args, torch_fn=tfn, name=name)


def test_second_order_through_math_ops():
    check_op(lambda x: (x.sin() * x.erf()).sum(), r(4), second_order=True, name="sin*erf")
    check_op(lambda x: x.logsumexp(0), r(3, 2), second_order=True, name="logsumexp")


PREDICATES = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit"]


@pytest.mark.parametrize("name", PREDICATES)
def test_predicates(name):
    x = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan])
    got = getattr(ember, name)(ember.tensor(x))
    assert got.dtype == ember.bool
    expected = {
        "isnan": np.isnan,
        "isinf": np.isinf,
        "isfinite": np.isfinite,
        "isposinf": np.isposinf,
        "isneginf": np.isneginf,
        "signbit": np.signbit,
    }[name](x)
    np.testing.assert_array_equal(got.numpy(), expected)


def test_comparisons_and_logic():
    a = ember.tensor([1.0, 2.0, float("nan")])
    b = ember.tensor([1.0 + 1e-9, 2.1, float("nan")])
    assert ember.isclose(a, b).tolist() == [True, False, False]
    assert ember.isclose(a, b, equal_nan=True).tolist() == [True, False, True]
    assert not ember.allclose(a, b)
    assert ember.allclose(a[:1], b[:1])
    assert ember.equal(ember.tensor([1, 2]), ember.tensor([1, 2]))
    assert not ember.equal(ember.tensor([1, 2]), ember.tensor([1, 3]))
    assert not ember.equal(ember.tensor([1, 2]), ember.tensor([1, 2, 3]))
    x = ember.tensor([[0.0, 1.0], [2.0, 0.0]])
    assert ember.any(x).item() and not ember.all(x).item()
    assert x.any(dim=1).tolist() == [True, True]
    assert x.all(dim=0).tolist() == [False, False]
    assert x.count_nonzero().item() == 2
    assert x.count_nonzero(dim=0).tolist() == [1, 1]


def test_nan_to_num():
    x = ember.tensor([float("nan"), float("inf"), -float("inf"), 1.0], requires_grad=True)
    y = ember.nan_to_num(x, nan=0.0, posinf=5.0)
    assert y.tolist()[:2] == [0.0, 5.0] and y.tolist()[3] == 1.0
    assert y.tolist()[2] == float(np.finfo(np.float32).min)
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 1.0]


def test_stable_logsumexp_for_large_inputs():
    x = ember.tensor([[1e4, 1e4 - 1.0], [-1e4, -1e4]], requires_grad=True)
    y = x.logsumexp(1)
    assert np.isfinite(y.detach().numpy()).all()
    np.testing.assert_allclose(y.detach().numpy(), [1e4 + np.log1p(np.exp(-1.0)), -1e4 + np.log(2)], rtol=1e-6)
    y.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


def test_errors_name_the_problem():
    with pytest.raises(IndexError, match="narrow"):
        ember.ones(3, 4).narrow(1, 2, 5)
    with pytest.raises(ValueError, match="unflatten"):
        ember.ones(3, 4).unflatten(1, (3, 2))
    with pytest.raises(ValueError, match="repeat"):
        ember.ones(3, 4).repeat(2)
    with pytest.raises(IndexError, match="cumsum: dim 2 is out of range"):
        ember.ones(3).cumsum(2)


@pytest.mark.skipif(torch_or_none() is None, reason="torch not installed")
def test_integer_inputs_follow_torch():
    import torch

    x = np.array([1, 2, 3])
    for name in ["square", "sin", "exp2", "log1p", "sqrt", "erf"]:
        got = getattr(ember, name)(ember.tensor(x))
        want = getattr(torch, name)(torch.tensor(x))
        assert got.dtype.name == str(want.dtype).replace("torch.", "").replace("ember.", ""), name
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
