"""PyTorch's in-place ``name_`` methods beside each out-of-place operator, run the same way under both libraries:
the tensor written, the method returning it, and the gradients reaching the tensor's history and the other
arguments (where PyTorch defines them for the in-place form)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

R = np.random.RandomState(0)
UNIT = R.uniform(0.2, 0.9, (3, 4))  # inside (0, 1)
BIG = R.uniform(1.2, 2.5, (3, 4))  # above 1
SIGNED = R.randn(3, 4)
POS = R.uniform(0.5, 1.5, (3, 4))
ROUND = np.round(SIGNED)


def _t(lib, a, grad=False):
    return lib.tensor(np.array(a), requires_grad=grad)


def _i(lib, a):
    return lib.tensor(np.array(a, dtype=np.int64))


def _none(lib):
    return (), {}


def _other(values, grad=True):
    return lambda lib: ((_t(lib, values, grad),), {})


def _number(*v, **kw):
    return lambda lib: (v, kw)


# name -> (the tensor's values, its arguments (lib -> (args, kwargs)))
CASES = {
    **{
        n: (SIGNED, _none)
        for n in (
            "absolute_",
            "arcsinh_",
            "arctan_",
            "asinh_",
            "deg2rad_",
            "erfc_",
            "exp2_",
            "i0_",
            "negative_",
            "rad2deg_",
            "sgn_",
            "sinc_",
        )
    },
    **{n: (UNIT, _none) for n in ("arccos_", "arcsin_", "arctanh_", "atanh_")},
    **{n: (BIG, _none) for n in ("acosh_", "arccosh_", "digamma_", "lgamma_")},
    "fix_": (SIGNED * 3, _none),
    "arctan2_": (SIGNED, _other(POS)),
    "copysign_": (SIGNED, _other(-POS)),
    "divide_": (SIGNED, lambda lib: ((_t(lib, POS, True),), {"rounding_mode": None})),
    "true_divide_": (SIGNED, _other(POS)),
    "multiply_": (SIGNED, _other(POS)),
    "subtract_": (SIGNED, lambda lib: ((_t(lib, POS, True),), {"alpha": 2.0})),
    "fmod_": (SIGNED * 5, _other(POS)),
    "hypot_": (SIGNED, _other(POS)),
    "xlogy_": (UNIT, _other(POS)),
    "ldexp_": (SIGNED, _other(np.array([1.0, 2.0, -1.0, 0.0]), grad=False)),
    "floor_divide_": (SIGNED * 5, _other(POS, grad=False)),
    "heaviside_": (ROUND, _other(POS, grad=False)),
    "nextafter_": (SIGNED, _other(POS, grad=False)),
    "clip_": (SIGNED, _number(-0.5, 0.5)),
    "cumprod_": (SIGNED, _number(1)),
    "float_power_": (BIG, _number(2.5)),
    "mvlgamma_": (BIG + 1, _number(2)),
    "polygamma_": (BIG, _number(1)),
    "renorm_": (SIGNED, _number(2, 0, 1.0)),
    "addmm_": (
        SIGNED,
        lambda lib: ((_t(lib, R.randn(3, 5), True), _t(lib, R.randn(5, 4), True)), {"beta": 0.5, "alpha": 2.0}),
    ),
    "addbmm_": (SIGNED, lambda lib: ((_t(lib, R.randn(2, 3, 5), True), _t(lib, R.randn(2, 5, 4), True)), {})),
    "addr_": (SIGNED, lambda lib: ((_t(lib, R.randn(3), True), _t(lib, R.randn(4), True)), {"alpha": 3.0})),
    "addmv_": (SIGNED[0], lambda lib: ((_t(lib, R.randn(4, 5), True), _t(lib, R.randn(5), True)), {})),
    "baddbmm_": (
        R.randn(2, 3, 4),
        lambda lib: ((_t(lib, R.randn(2, 3, 5), True), _t(lib, R.randn(2, 5, 4), True)), {"beta": 2.0}),
    ),
    "index_copy_": (SIGNED, lambda lib: ((1, _i(lib, [2, 0]), _t(lib, R.randn(3, 2), True)), {})),
    "index_fill_": (SIGNED, lambda lib: ((1, _i(lib, [3, 1]), -2.0), {})),
    "masked_scatter_": (SIGNED, lambda lib: ((lib.tensor(SIGNED > 0), _t(lib, R.randn(3, 4), True)), {})),
    **{n: (SIGNED, _number(0.1)) for n in ("ge_", "greater_", "greater_equal_", "less_", "less_equal_", "le_")},
    **{n: (ROUND, _number(0.0)) for n in ("ne_", "not_equal_")},
    "eq_": (ROUND, _other(np.round(POS), grad=False)),
    "gt_": (SIGNED, _other(POS - 1, grad=False)),
    "lt_": (SIGNED, _other(POS - 1, grad=False)),
}
INTEGER = {
    "bitwise_left_shift_": lambda lib: ((_i(lib, [1, 2, 0, 3]),), {}),
    "bitwise_right_shift_": lambda lib: ((_i(lib, [1, 2, 0, 3]),), {}),
    "gcd_": lambda lib: ((_i(lib, [4, 6, 9, 10]),), {}),
    "lcm_": lambda lib: ((_i(lib, [4, 6, 9, 10]),), {}),
}
LOOSE = {"polygamma_": 1e-8, "digamma_": 1e-8}  # PyTorch's trigamma is ~5e-10 off (Ember's matches SciPy's)


def _array(g):
    """``g``'s values; PyTorch hands back some zero gradients as a ZeroTensor, which has no storage to read."""
    return np.zeros(g.shape) if getattr(g, "_is_zerotensor", lambda: False)() else g.numpy().copy()


def _run(lib, name):
    values, make = CASES[name]
    R.seed(1)
    base = lib.tensor(np.array(values), requires_grad=True)
    x = base * 1.0
    args, kwargs = make(lib)
    assert getattr(x, name)(*args, **kwargs) is x
    out = {"value": x.detach().numpy().copy()}
    w = lib.tensor(np.arange(x.numel(), dtype=np.float64).reshape(x.shape) / 7 + 0.3)
    try:
        (x * w).sum().backward()
    except (NotImplementedError, RuntimeError):  # PyTorch has no derivative for some in-place forms (acosh_)
        if lib is torch:
            return out
        raise
    grads = [base.grad] + [a.grad for a in args if hasattr(a, "requires_grad") and a.requires_grad]
    out["grads"] = [None if g is None else _array(g) for g in grads]
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_inplace_method_matches_torch(name):
    want, got = _run(torch, name), _run(ember, name)
    rtol = LOOSE.get(name, 1e-10)
    np.testing.assert_allclose(got["value"], want["value"], rtol=rtol, atol=1e-12)
    if "grads" in want:
        for g, t in zip(got["grads"], want["grads"], strict=True):
            assert (g is None) == (t is None)
            if t is not None:
                np.testing.assert_allclose(g, t, rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("name", sorted(INTEGER))
def test_integer_inplace_method_matches_torch(name):
    res = []
    for lib in (torch, ember):
        x = _i(lib, [[5, 12, 7, 30], [-3, 8, 27, 1]])
        args, kwargs = INTEGER[name](lib)
        assert getattr(x, name)(*args, **kwargs) is x
        res.append(x.numpy())
    np.testing.assert_array_equal(res[1], res[0])


def test_comparison_in_place_keeps_requires_grad_with_zero_gradient():
    a = ember.tensor([1.0, -2.0, 3.0], requires_grad=True)
    x = a * 2.0
    x.gt_(0.0)
    assert x.requires_grad and x.dtype == ember.float32 and x.tolist() == [1.0, 0.0, 1.0]
    (x * 5.0).sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("shape", "wrap"),
    [((3, 3), False), ((5, 3), False), ((7, 3), True), ((3, 5), False), ((3, 5), True), ((2, 2, 2), False),
     ((0, 0), False), ((1, 4), True)],
)  # fmt: skip
def test_fill_diagonal_matches_torch(shape, wrap):
    res = []
    for lib in (torch, ember):
        base = lib.ones(*shape, dtype=lib.float64, requires_grad=True)
        x = base * 2.0
        assert x.fill_diagonal_(-1.5, wrap=wrap) is x
        (x * lib.arange(x.numel(), dtype=lib.float64).reshape(shape)).sum().backward()
        res.append((x.detach().numpy(), base.grad.numpy()))
    for got, want in zip(res[1], res[0], strict=True):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(RuntimeError, match="fill_diagonal_"):
        ember.zeros(2, 3, 4).fill_diagonal_(1.0)


def _facts(lib):
    x = lib.tensor(np.array([[1.5, -2.0, 0.0], [3.0, 4.0, -1.0]]))
    y = lib.tensor(np.array([[0.5, 1.0, 2.0], [1.0, 0.0, -3.0]]))
    u = lib.tensor(np.array([1, 2], dtype=np.uint8))
    a, b = x.unbind(0)
    return {
        "kinds": (x.is_meta, x.is_xpu, x.is_quantized, x.is_nested, x.is_mkldnn, x.is_mps, x.is_inference()),
        "sizes": (x.itemsize, u.itemsize, x.ndimension(), x.is_same_size(y), x.is_same_size(a)),
        "signed": (x.is_signed(), u.is_signed(), lib.tensor([True]).is_signed(), lib.tensor([1]).is_signed()),
        "nonzero": (
            lib.tensor([0.0]).is_nonzero(),
            lib.tensor([[2]]).is_nonzero(),
            lib.tensor(float("nan")).is_nonzero(),
        ),
        "output_nr": (a.output_nr, b.output_nr, x.output_nr),
        "dist": [round(float(x.dist(y, p)), 10) for p in (2, 1, 0, 3.5, float("inf"))],
        "msort": x.msort().tolist(),
        "hardshrink": x.hardshrink(1.6).tolist(),
        "prelu": x.prelu(lib.tensor(np.array([0.25]))).tolist(),
        "unsafe": [
            t.tolist() for t in (*x.unsafe_chunk(2, 1), *x.unsafe_split(2), *x.unsafe_split_with_sizes([1, 2], 1))
        ],
        # (PyTorch 2.11's Python Tensor has no const_data_ptr, which later versions have: Ember's is checked alike)
        "const_data_ptr": x.const_data_ptr() == x.data_ptr() if lib is ember or hasattr(x, "const_data_ptr") else True,
    }


def test_tensor_facts_and_small_methods_match_torch():
    got, want = _facts(ember), _facts(torch)
    assert got == want
    with pytest.raises(RuntimeError, match="is_nonzero"):
        ember.ones(2).is_nonzero()
    with pytest.raises(RuntimeError):
        torch.ones(2).is_nonzero()


def test_dist_gradient_matches_torch():
    res = []
    for lib in (torch, ember):
        x = lib.tensor(np.array([[1.5, -2.0, 0.25], [3.0, 4.0, -1.0]]), requires_grad=True)
        y = lib.tensor(np.array([0.5, 1.0, 2.0]), requires_grad=True)
        x.dist(y, 3.0).backward()
        res.append((x.grad.numpy(), y.grad.numpy()))
    for g, t in zip(res[1], res[0], strict=True):
        np.testing.assert_allclose(g, t, rtol=1e-12)
