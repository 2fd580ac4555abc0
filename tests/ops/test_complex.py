"""Complex dtypes: promotion, printing, the parts as views, autograd with PyTorch's convention (complex
gradcheck + parity with PyTorch in complex64 and complex128), refusals of real-only operators, records."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import Function, gradcheck
from ember.testing import check_op, torch_or_none

rng = np.random.default_rng(25)


def c(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def r(*shape):
    return rng.standard_normal(shape)


def T():
    return __import__("torch")


def both(label, fn, args, **kw):
    """``fn(lib, *tensors)`` with ``lib`` = ember and torch."""
    return (label, lambda *a: fn(ember, *a), lambda *a: fn(T(), *a), args, kw)


CASES = [
    # arithmetic (complex with complex, with real tensors, with Python scalars)
    both("add", lambda L, a, b: a + b, [c(3, 1), c(4)]),
    both("sub_real", lambda L, a, b: a - b, [c(2, 3), r(3)]),
    both("mul", lambda L, a, b: a * b, [c(2, 3), c(2, 1)]),
    both("mul_real", lambda L, a, b: a * b, [r(2, 3), c(3)]),
    both("cat_mixed", lambda L, a, b: L.cat([a, b]) * 1j, [r(2, 3), c(2, 3)]),
    # PyTorch's own backward refuses this one (a real input's gradient meets a complex one): gradcheck only
    ("where_mixed", lambda a, b: ember.where(b.real > 0, a, b), None, [r(4), c(4)], {}),
    both("div_real", lambda L, a, b: a / b, [c(3), r(3) + 3]),
    both("mul_scalar", lambda L, a: (a * (1.5 - 2j)) * 2.0 + 1j, [c(4)]),
    both("div", lambda L, a, b: a / b, [c(2, 3), c(3)]),
    both("rdiv_scalar", lambda L, a: (2 + 1j) / a, [c(4)]),
    both("pow_int", lambda L, a: a**3, [c(4)]),
    both("pow_float", lambda L, a: a**2.5, [c(4)]),
    both("pow_complex", lambda L, a: a ** (0.5 + 1j), [c(4)]),
    both("pow_tensor", lambda L, a, b: a**b, [c(4), c(4)]),
    both("rpow", lambda L, a: 2**a, [c(4)]),
    both("neg", lambda L, a: -a, [c(3)]),
    both("reciprocal", lambda L, a: a.reciprocal(), [c(3)]),
    both("square", lambda L, a: a.square(), [c(3)]),
    both("addcmul", lambda L, a, b: L.addcmul(a, a, b, value=0.5), [c(3), c(3)]),
    # transcendental
    both("exp", lambda L, a: a.exp(), [c(2, 2)]),
    both("log", lambda L, a: a.log(), [c(3)]),
    both("sqrt", lambda L, a: a.sqrt(), [c(3)]),
    both("rsqrt", lambda L, a: a.rsqrt(), [c(3)]),
    both("sin_cos", lambda L, a: a.sin() * a.cos(), [c(3)]),
    both("tan", lambda L, a: a.tan(), [c(3) * 0.5]),
    both("tanh", lambda L, a: a.tanh(), [c(3) * 0.5]),
    both("sinh_cosh", lambda L, a: a.sinh() + a.cosh(), [c(3)]),
    both("asin_acos", lambda L, a: a.asin() + 2 * a.acos(), [c(3) * 0.5]),
    both("atan", lambda L, a: a.atan(), [c(3) * 0.5]),
    both("asinh_acosh_atanh", lambda L, a: a.asinh() + a.acosh() + a.atanh(), [c(3) * 0.5]),
    both("sigmoid", lambda L, a: a.sigmoid(), [c(4)]),
    both("expm1_log1p", lambda L, a: a.expm1() + a.log1p(), [c(3) * 0.3]),
    both("log2_log10_exp2", lambda L, a: a.log2() + a.log10() + a.exp2(), [c(3)]),
    both("logaddexp", lambda L, a, b: L.logaddexp(a, b), [c(3), c(3)]),
    both("float_power", lambda L, a: L.float_power(a, 2), [c(3)]),
    # parts, magnitude and phase
    both("abs", lambda L, a: a.abs(), [c(5)]),
    both("angle", lambda L, a: a.angle(), [c(5)]),
    both("angle_real", lambda L, a: L.angle(a), [r(5)]),
    both("sgn", lambda L, a: a.sgn(), [c(5)]),
    both("real", lambda L, a: L.real(a) * 2, [c(2, 3)]),
    both("imag", lambda L, a: a.imag * 3, [c(2, 3)]),
    both("conj", lambda L, a: a.conj() * a, [c(3)]),
    both("conj_physical", lambda L, a: L.conj_physical(a) * 2, [c(3)]),
    both("view_as_real", lambda L, a: L.view_as_real(a) * 2, [c(2, 3)]),
    both("view_as_complex", lambda L, a: L.view_as_complex(a) * (1 + 1j), [r(3, 2)]),
    both("complex", lambda L, a, b: L.complex(a, b), [r(3, 1), r(4)]),
    both("polar", lambda L, a, b: L.polar(a, b), [rng.uniform(0.5, 2, 4), r(4)]),
    both("adjoint", lambda L, a: a.mH * 2, [c(2, 3)]),
    # reductions
    both("sum", lambda L, a: a.sum(1), [c(2, 3)]),
    both("mean", lambda L, a: a.mean(), [c(2, 3)]),
    both("prod", lambda L, a: a.prod(1), [c(2, 3)]),
    both("cumsum", lambda L, a: a.cumsum(0), [c(3, 2)]),
    both("cumprod", lambda L, a: a.cumprod(1), [c(2, 4)]),
    both("var", lambda L, a: a.var(1), [c(2, 4)]),
    both("std", lambda L, a: a.std(), [c(2, 4)]),
    both("norm", lambda L, a: a.norm(), [c(2, 4)]),
    both("vector_norm", lambda L, a: L.linalg.vector_norm(a, 3, 1), [c(2, 4)]),
    both("logsumexp", lambda L, a: L.logsumexp(a, 1), [c(2, 4)]),
    # products
    both("matmul", lambda L, a, b: a @ b, [c(2, 3, 4), c(4, 5)]),
    both("matmul_vec", lambda L, a, b: a @ b, [c(4), c(4, 2)]),
    both("einsum", lambda L, a, b: L.einsum("bij,jk->bik", a, b), [c(2, 3, 4), c(4, 2)]),
    both("vdot", lambda L, a, b: L.vdot(a, b), [c(4), c(4)]),
    both("outer", lambda L, a, b: L.outer(a, b), [c(3), c(4)]),
    both("linear", lambda L, x, w, b: L.nn.functional.linear(x, w, b), [c(2, 3), c(4, 3), c(4)]),
    # layout and indexing
    both("getitem", lambda L, a: a[1:, [0, 2]], [c(3, 4)]),
    both("mask", lambda L, a: a[a.real > 0], [c(3, 4)]),
    both("gather", lambda L, a: L.gather(a, 1, L.tensor([[0, 1], [2, 0]])), [c(2, 3)]),
    both("cat_stack", lambda L, a, b: L.stack([L.cat([a, b]), b.repeat(2, 1)]), [c(2, 3), c(2, 3)]),
    both("where", lambda L, a, b: L.where(a.abs() > 1, a, b), [c(4), c(4)]),
    both("flip_roll", lambda L, a: L.roll(a.flip(0), 1, 1), [c(2, 3)]),
    both("reshape_t", lambda L, a: a.reshape(3, 2).t(), [c(2, 3)]),
    both("setitem", lambda L, a, b: (lambda t: (t.__setitem__(0, b), t)[1])(a * 1), [c(2, 3), c(3)]),
    both("masked_fill", lambda L, a: a.masked_fill(a.real > 0, 2j), [c(2, 3)]),
]


@pytest.mark.parametrize("label,fn,torch_fn,args,kw", CASES, ids=[case[0] for case in CASES])
def test_complex_registry(label, fn, torch_fn, args, kw):
    check_op(fn, *args, torch_fn=torch_fn, name=label, **kw)


def test_registry_includes_second_order():
    z = ember.tensor(c(3), dtype=ember.complex128, requires_grad=True)
    from ember.autograd import gradgradcheck

    assert gradgradcheck(lambda t: (t * t.exp()).sin(), [z])


# -- dtypes, promotion, creation ---------------------------------------------------------------------------------
def test_dtype_names_and_aliases():
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128
    assert ember.complex64.is_complex and not ember.complex64.is_floating_point
    assert not ember.float32.is_complex
    assert ember.complex128.itemsize == 16
    t = ember.zeros(2).cfloat()
    assert t.dtype is ember.complex64 and t.is_complex() and not t.is_floating_point()
    assert t.cdouble().dtype is ember.complex128


@pytest.mark.skipif(torch_or_none() is None, reason="needs torch")
def test_promotion_matches_torch():
    torch = T()
    names = ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
    for a in names:
        for b in names:
            e = ember.promote_types(
                getattr(ember, a if a != "bool" else "bool_"), getattr(ember, b if b != "bool" else "bool_")
            )
            t = torch.promote_types(getattr(torch, a), getattr(torch, b))
            assert e.name == str(t).replace("torch.", "").replace("ember.", ""), (a, b, e, t)


@pytest.mark.skipif(torch_or_none() is None, reason="needs torch")
def test_python_complex_is_weak():
    torch = T()
    for dt in ["int64", "bool", "float32", "float64", "complex64", "complex128"]:
        e = ember.ones(2, dtype=getattr(ember, dt if dt != "bool" else "bool_")) + 1j
        t = torch.ones(2, dtype=getattr(torch, dt)) + 1j
        assert e.dtype.name == str(t.dtype).replace("torch.", "").replace("ember.", "")
    assert (ember.ones(2, dtype=ember.complex64) * 2.5).dtype is ember.complex64
    assert ember.tensor(1j).dtype is ember.complex64 and ember.tensor([1, 2j]).dtype is ember.complex64
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor(1j).dtype is ember.complex128
    finally:
        ember.set_default_dtype(ember.float32)


def test_creation_and_conversion():
    z = ember.full((2,), 1 + 2j)
    assert z.dtype is ember.complex64 and z.tolist() == [1 + 2j, 1 + 2j]
    assert complex(ember.tensor(3 - 1j)) == 3 - 1j and ember.tensor(3 - 1j).item() == 3 - 1j
    g = ember.Generator().manual_seed(0)
    n = ember.randn(20000, dtype=ember.cdouble, generator=g)
    assert n.dtype is ember.complex128
    assert abs(float(n.real.var()) - 0.5) < 0.03 and abs(float(n.imag.var()) - 0.5) < 0.03  # PyTorch: 1/2 each
    u = ember.rand(3, dtype=ember.cfloat)
    assert u.dtype is ember.complex64 and bool(((u.real >= 0) & (u.real < 1) & (u.imag >= 0)).all())
    assert ember.tensor([1, 2]).to(ember.complex64).dtype is ember.complex64


def test_printing():
    assert repr(ember.tensor([1 + 2j, 3.5 - 4j])) == "[1.0+2.0j, 3.5-4.0j]"
    assert repr(ember.tensor(complex(0, -1))) == "(0.0-1.0j)"
    text = repr(ember.tensor([[[1 + 1j]]]))
    assert "1+1j" in text and "dtype=complex64" in text


# -- the parts are views --------------------------------------------------------------------------------------------
def test_real_imag_are_writable_views():
    z = ember.tensor([1 + 2j, 3 - 4j])
    z.real[0] = 10.0
    z.imag.mul_(2)
    assert z.tolist() == [10 + 4j, 3 - 8j]
    z.imag = ember.tensor([0.0, 1.0])
    assert z.tolist() == [10 + 0j, 3 + 1j]
    x = ember.ones(3)
    assert x.real is x
    with pytest.raises(RuntimeError, match="non-complex"):
        x.imag


def test_view_as_real_and_complex_share_memory():
    z = ember.tensor([1 + 2j, 3 - 4j])
    v = ember.view_as_real(z)
    assert v.shape == (2, 2) and v.dtype is ember.float32
    v[1, 1] = 7.0
    assert z.tolist()[1] == 3 + 7j
    w = ember.view_as_complex(v)
    w[0] = 5j
    assert z.tolist()[0] == 5j
    strided = ember.tensor(c(3, 4))[:, ::2]
    assert ember.view_as_real(strided).tolist() == [[[x.real, x.imag] for x in row] for row in strided.tolist()]
    with pytest.raises(RuntimeError, match="stride"):
        ember.view_as_complex(ember.zeros(4, 2).t().contiguous().t())
    with pytest.raises(RuntimeError, match="size 2"):
        ember.view_as_complex(ember.zeros(4, 3))


def test_autograd_through_a_write_into_imag():
    z = ember.tensor(c(3), dtype=ember.complex128, requires_grad=True)
    y = z * 2
    y.imag[1] = 0.0
    y.abs().sum().backward()
    if torch_or_none() is not None:
        torch = T()
        tz = torch.tensor(z.detach().numpy(), requires_grad=True)
        ty = tz * 2
        ty.imag[1] = 0.0
        ty.abs().sum().backward()
        np.testing.assert_allclose(z.grad.numpy(), tz.grad.numpy(), rtol=1e-10)


@pytest.mark.skipif(torch_or_none() is None, reason="needs torch")
def test_real_leaf_meeting_complex_gets_real_gradient():
    torch = T()
    x, w = r(3), c(3)
    ex, ew = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    (ex * ew).abs().sum().backward()
    (tx * tw).abs().sum().backward()
    assert ex.grad.dtype is ember.float64
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-10)


def test_complex_leaf_requires_grad_and_backward_needs_a_real_scalar():
    z = ember.tensor([1 + 1j], requires_grad=True)
    assert z.requires_grad
    with pytest.raises(RuntimeError):
        ember.tensor([1, 2]).requires_grad_()


def test_gradcheck_catches_a_wrong_complex_gradient():
    class NoConj(Function):  # d(z^2) = 2z, but PyTorch's convention needs g * conj(2z)
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return g * 2 * z

    z = ember.tensor(c(3), dtype=ember.complex128, requires_grad=True)
    assert not gradcheck(NoConj.apply, [z], raise_exception=False)
    assert gradcheck(lambda t: t * t, [z])
    with pytest.raises(TypeError, match="complex128"):
        gradcheck(lambda t: t * t, [ember.tensor(c(2), dtype=ember.complex64, requires_grad=True)])


# -- real-only operators refuse complex tensors, as PyTorch does -------------------------------------------------
REFUSED = {
    "lt": lambda L, a: a < a,
    "ge": lambda L, a: L.ge(a, 0),
    "maximum": lambda L, a: L.maximum(a, a),
    "max": lambda L, a: a.max(),
    "argmax": lambda L, a: a.argmax(0),
    "amin": lambda L, a: a.amin(0),
    "sort": lambda L, a: L.sort(a),
    "median": lambda L, a: a.median(),
    "clamp": lambda L, a: a.clamp(0, 1),
    "relu": lambda L, a: L.relu(a),
    "floor": lambda L, a: a.floor(),
    "round": lambda L, a: a.round(),
    "sign": lambda L, a: a.sign(),
    "remainder": lambda L, a: a % 2,
    "atan2": lambda L, a: L.atan2(a, a),
    "cummax": lambda L, a: L.cummax(a, 0),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_real_only_ops_refuse_complex(name):
    fn = REFUSED[name]
    with pytest.raises((RuntimeError, TypeError)) as e:
        fn(ember, ember.tensor(c(3)))
    assert isinstance(e.value, RuntimeError) and isinstance(e.value, TypeError)  # DTypeError
    if torch_or_none() is not None:
        with pytest.raises((RuntimeError, TypeError)):
            fn(T(), T().tensor(c(3)))


def test_float_ops_keep_their_behaviour_on_real_tensors():
    x = ember.tensor([-1.5, 2.5])
    assert x.sign().tolist() == [-1.0, 1.0] and x.sgn().tolist() == [-1.0, 1.0]
    assert F.relu(x).tolist() == [0.0, 2.5] and bool((x < 0)[0])


# -- records and files ------------------------------------------------------------------------------------------------
def test_save_load_complex(tmp_path):
    z = ember.tensor(c(2, 3), dtype=ember.complex128)
    p = tmp_path / "z.pt"
    ember.save({"z": z, "w": z.to(ember.complex64)}, p)
    back = ember.load(p)
    assert back["z"].dtype is ember.complex128 and back["w"].dtype is ember.complex64
    np.testing.assert_array_equal(back["z"].numpy(), z.numpy())


def test_complex_grad_ops_names_real_operators():
    """Every name in the list of complex-safe operators is an operator class that exists (no stale entries)."""
    from ember.autograd._function import COMPLEX_GRAD_OPS, Function

    names, todo = set(), [Function]
    while todo:
        for sub in todo.pop().__subclasses__():
            names.add(sub.__name__)
            todo.append(sub)
    assert not COMPLEX_GRAD_OPS - names, sorted(COMPLEX_GRAD_OPS - names)


@pytest.mark.parametrize(
    "name,fn",
    [
        ("softsign", lambda a: ember.nn.functional.softsign(a)),
        ("relu", lambda a: ember.nn.functional.relu(a)),
    ],
)
def test_unverified_ops_refuse_complex_gradients(name, fn):
    """An operator whose complex gradient is not tested against PyTorch refuses to record one (it used to give
    a silently wrong gradient for inv/solve/det, which now have tested ones: test_linalg_complex_grad.py); without
    grad the forward still runs where it is defined."""
    a = ember.tensor(c(3, 3) + 3 * np.eye(3), requires_grad=True)
    with pytest.raises(TypeError, match="complex"):
        out = fn(a)
        (out.abs() if out.dtype.is_complex else out).sum().backward()
