"""The NumPy backend's Python numbers kept as 0-d arrays (``numpy_backend.keep_number``, issue 28): the arithmetic
operators' forward and array backward, and tanh/sigmoid's gradients, give NumPy's own results on the Python number
bit for bit, with the same warnings, in every operand order."""

import math
import random
import warnings

import numpy as np
import pytest

import ember
from ember.backends import numpy_backend as nb

_rng = random.Random(0)
VALUES = [0.5, 1.0, 2.0, 0.1, 1 / 3, -2.5, 1e-3, 3e38, 3.4028235e38, 3.5e38, 1e-45, 1e-50, 5e-324, 1e300, -1e300]
VALUES += [65504.0, 65520.0, 7, -3, 2**24, 2**24 + 1, 2**53 + 1, 2**63 - 1, 2**64, 2**70, 0, 0.0, -0.0]
VALUES += [math.inf, -math.inf, math.nan]
VALUES += [_rng.uniform(-1, 1) * 10 ** _rng.randint(-40, 40) for _ in range(40)] + [_rng.randint(-999, 999)]
UFUNCS = [np.add, np.subtract, np.multiply, np.true_divide]


def _x(dtype, n=24):
    x = np.random.default_rng(0).standard_normal(n) * 300
    x[:5] = [0.0, -0.0, np.inf, -np.inf, np.nan]
    with np.errstate(invalid="ignore"):
        return x.astype(dtype)


def _call(f, *args):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = f(*args)
        except (OverflowError, ValueError) as e:
            return type(e).__name__, [str(m.message) for m in w]
    return (r.dtype, np.asarray(r).tobytes()), [str(m.message) for m in w]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "complex64"])
@pytest.mark.parametrize("shape", [(24,), (), (3, 8)])
def test_kept_numbers_give_numpys_bits_and_warnings(dtype, shape):
    x = _x(dtype).reshape(-1)[: math.prod(shape)].reshape(shape) if shape else _x(dtype)[7].reshape(())
    for v in VALUES:
        for f in UFUNCS:
            for _ in range(2):  # the second call finds the kept array
                k = nb.keep_number(x, v)
                assert _call(f, x, k) == _call(f, x, v), (dtype, v, f.__name__)
                assert _call(f, k, x) == _call(f, v, x), (dtype, v, f.__name__)


def test_what_is_left_to_numpy():
    x = _x("float32")
    for v in (0, 0.0, -0.0, math.nan, 1e300, True, 10**400, np.float32(0.5), x[:1], 1j, None):
        assert nb.keep_number(x, v) is v
    assert nb.keep_number(x.astype(">f4"), 0.5) == 0.5 and nb.keep_number(x.astype(">f4"), 0.5).__class__ is float
    assert nb.keep_number(np.arange(3), 0.5).__class__ is float
    k = nb.keep_number(x, 0.25)
    assert k.dtype == np.float32 and k.shape == () and not k.flags.writeable
    assert nb.keep_number(x, 0.25) is k


def test_the_cache_is_bounded():
    x = _x("float64")
    for i in range(nb._MAX_NUMBERS + 10):
        nb.keep_number(x, 1.0 + i / 7)
    assert len(nb._NUMBERS) <= nb._MAX_NUMBERS


@pytest.mark.skipif(ember.backends.get_backend().name != "numpy", reason="the NumPy backend's kernels")
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_operators_and_gradients_match_plain_numpy(dtype):
    xa = _x(dtype)[5:] / 400
    x = ember.tensor(xa, requires_grad=True)
    cases = [
        ("x+v", lambda t, v: t + v, lambda a, v: a + v, None),
        ("v-x", lambda t, v: v - t, lambda a, v: v - a, None),
        ("x*v", lambda t, v: t * v, lambda a, v: a * v, lambda a, g, v: g * v),
        ("v*x", lambda t, v: v * t, lambda a, v: v * a, lambda a, g, v: g * v),
        ("x/v", lambda t, v: t / v, lambda a, v: a / v, lambda a, g, v: g / v),
        ("v/x", lambda t, v: v / t, lambda a, v: v / a, None),
    ]
    for v in (0.5, 3, 0.1, -2.0):
        for name, f, ref, dref in cases:
            y = f(x, v)
            assert y.detach().numpy().tobytes() == ref(xa, v).tobytes(), name
            g = np.linspace(-1, 1, xa.size).astype(dtype)
            (gx,) = ember.autograd.grad(y, x, ember.tensor(g))
            if dref is not None:
                assert gx.numpy().tobytes() == dref(xa, g, v).tobytes(), name
    t = x.tanh()
    (gx,) = ember.autograd.grad(t, x, ember.tensor(np.ones_like(xa)))
    yt = np.tanh(xa)
    assert gx.numpy().tobytes() == (np.ones_like(xa) * (1 - yt * yt)).tobytes()
    s = x.sigmoid()
    (gx,) = ember.autograd.grad(s, x, ember.tensor(np.ones_like(xa)))
    ys = s.detach().numpy()
    assert gx.numpy().tobytes() == (np.ones_like(xa) * ys * (1 - ys)).tobytes()
