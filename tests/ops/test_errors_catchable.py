"""Bad calls raise errors PyTorch code can catch (``RuntimeError``) that name the op (issue 14, section 5).

Ember's errors are also the Python type a plain-Python caller expects (``ValueError`` for a bad shape or
value, ``TypeError`` for a bad dtype, ``IndexError`` for an index out of range), and no internal error
(a NumPy broadcasting message, a ``zip()`` mismatch) leaks out.
"""

import pytest

import ember
import ember.nn.functional as F
from ember._errors import DeviceError, DTypeError, EmberError, OutOfRangeError, ShapeError, ValueRangeError

E = ember


def x():
    return E.ones(2, 3)


BAD = [
    # (op named in the message, call, also-a)
    ("add", lambda: x() + E.ones(4, 5), ValueError),
    ("matmul", lambda: x() @ E.ones(4, 5), ValueError),
    ("where", lambda: E.where(E.ones(3).bool(), E.ones(2), E.ones(3)), ValueError),
    ("masked_fill", lambda: x().masked_fill(E.ones(4).bool(), 0.0), ValueError),
    ("setitem", lambda: x().__setitem__(0, E.ones(5)), ValueError),
    ("cat", lambda: E.cat([x(), E.ones(4, 5)]), ValueError),
    ("stack", lambda: E.stack([x(), E.ones(3, 2)]), ValueError),
    ("reshape", lambda: x().reshape(4, 2), ValueError),
    ("view", lambda: x().t().view(6), ValueError),
    ("expand", lambda: x().expand(3, 3), ValueError),
    ("sum", lambda: x().sum(3), IndexError),
    ("sum", lambda: E.tensor(1.0).sum(1), IndexError),
    ("flip", lambda: x().flip((0, 0)), ValueError),
    ("roll", lambda: x().roll((1, 2)), ValueError),
    ("gather", lambda: x().gather(1, E.tensor([[5]])), IndexError),
    ("scatter", lambda: E.zeros(3).scatter(0, E.tensor([0]), E.ones(1, dtype=E.float64)), TypeError),
    ("getitem", lambda: x()[5], IndexError),
    ("getitem", lambda: x()[E.tensor([0.5])], IndexError),
    ("einsum", lambda: E.einsum("i...j...", E.ones(2, 3, 4)), ValueError),
    ("einsum", lambda: E.einsum("...ij,...jk...->ik", E.ones(2, 3), E.ones(3, 4)), ValueError),
    ("einsum", lambda: E.einsum("ij,jk->ik", x(), E.ones(2, 2)), ValueError),
    ("conv2d", lambda: F.conv2d(E.ones(1, 3, 5, 5), E.ones(2, 4, 3, 3)), ValueError),
    ("linear", lambda: F.linear(x(), E.ones(4, 4)), ValueError),
    ("nll_loss", lambda: F.cross_entropy(x(), E.tensor([0, 5])), IndexError),
    ("nll_loss", lambda: F.cross_entropy(E.zeros(3, 4), E.zeros(3, 1, dtype=E.long)), ValueError),
    ("layer_norm", lambda: F.layer_norm(x(), (4,)), ValueError),
    ("embedding", lambda: F.embedding(E.tensor([9]), E.ones(3, 2)), IndexError),
    ("max_pool2d", lambda: F.max_pool2d(E.ones(1, 1, 2, 2), 5), ValueError),
    ("pad", lambda: F.pad(E.ones(1, 2, 3), (5, 5), mode="reflect"), ValueError),
    ("topk", lambda: x().topk(5), ValueError),
    ("bitwise_and", lambda: x() & x(), TypeError),
    ("pow", lambda: E.tensor([2]) ** -1, ValueError),
    ("linspace", lambda: E.linspace(0, 1, 5, dtype=E.bool), TypeError),
    ("view", lambda: E.ones(3, dtype=E.int16).view(E.int32), ValueError),
    ("item", lambda: x().item(), ValueError),
    ("multinomial", lambda: E.multinomial(E.ones(2, 3, 4), 1), ValueError),
    ("repeat_interleave", lambda: x().repeat_interleave(E.tensor([1, 2]), 1), ValueError),
    ("quantile", lambda: x().quantile(1.5), IndexError),
    ("max_unpool2d", lambda: F.max_unpool2d(E.ones(1, 1, 2, 2), E.tensor([[[[0, 1], [2, 99]]]]), 2), IndexError),
    ("scaled_dot_product_attention", lambda: F.scaled_dot_product_attention(E.ones(1, 2, 3), E.ones(1, 2, 4),
                                                                            E.ones(1, 2, 4)), ValueError),
    ("reduction", lambda: F.mse_loss(x(), x(), reduction="avg"), ValueError),
    ("batch_norm", lambda: F.batch_norm(x(), E.zeros(4), E.ones(4)), ValueError),
    ("one_hot", lambda: F.one_hot(E.tensor([5]), 3), ValueError),
]  # fmt: skip


@pytest.mark.parametrize("op,call,also", BAD, ids=[f"{i}-{b[0]}" for i, b in enumerate(BAD)])
def test_bad_calls_raise_catchable_errors_naming_the_op(op, call, also):
    with pytest.raises(RuntimeError) as info:
        call()
    err = info.value
    assert isinstance(err, EmberError), f"{type(err).__name__}: {err}"
    assert isinstance(err, also), f"{type(err).__name__} is not a {also.__name__}"
    assert op in str(err), str(err)
    assert "zip()" not in str(err) and "operands could not be broadcast" not in str(err)


def test_error_types():
    assert issubclass(ShapeError, RuntimeError) and issubclass(ShapeError, ValueError)
    assert issubclass(DTypeError, RuntimeError) and issubclass(DTypeError, TypeError)
    assert issubclass(DeviceError, RuntimeError)
    assert issubclass(OutOfRangeError, RuntimeError) and issubclass(OutOfRangeError, IndexError)
    assert issubclass(ValueRangeError, RuntimeError) and issubclass(ValueRangeError, ValueError)
