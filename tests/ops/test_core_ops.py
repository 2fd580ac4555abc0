"""The first op set through the shared harness: gradcheck + PyTorch parity."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.testing import check_op

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape)


def pos(*shape):
    return rng.uniform(0.5, 2.0, shape)


CASES = [
    ("add", lambda a, b: a + b, lambda a, b: a + b, [r(3, 1), r(4)]),
    ("sub", lambda a, b: a - b, lambda a, b: a - b, [r(2, 3), r(3)]),
    ("mul", lambda a, b: a * b, lambda a, b: a * b, [r(2, 3), r(2, 1)]),
    ("div", lambda a, b: a / b, lambda a, b: a / b, [r(2, 3), pos(3)]),
    ("pow_scalar", lambda a: a**3, lambda a: a**3, [r(4)]),
    ("pow_tensor", lambda a, b: a**b, lambda a, b: a**b, [pos(3), r(3)]),
    ("neg", lambda a: -a, lambda a: -a, [r(3)]),
    ("exp", lambda a: a.exp(), lambda a: a.exp(), [r(2, 2)]),
    ("log", lambda a: a.log(), lambda a: a.log(), [pos(3)]),
    ("sqrt", lambda a: a.sqrt(), lambda a: a.sqrt(), [pos(3)]),
    ("abs", lambda a: a.abs(), lambda a: a.abs(), [r(5)]),
    ("tanh", lambda a: a.tanh(), lambda a: a.tanh(), [r(5)]),
    ("sigmoid", lambda a: a.sigmoid(), lambda a: a.sigmoid(), [r(5)]),
    ("relu", lambda a: a.relu(), lambda a: a.relu(), [r(5)]),
    ("matmul", lambda a, b: a @ b, lambda a, b: a @ b, [r(2, 3, 4), r(4, 5)]),
    ("matmul_vec", lambda a, b: a @ b, lambda a, b: a @ b, [r(4), r(4, 2)]),
    ("sum", lambda a: a.sum(dim=1, keepdim=True), lambda a: a.sum(dim=1, keepdim=True), [r(2, 3)]),
    ("mean", lambda a: a.mean((0, 2)), lambda a: a.mean((0, 2)), [r(2, 3, 2)]),
    ("max_dim", lambda a: a.max(dim=1), lambda a: tuple(a.max(dim=1)), [r(3, 4)]),
    ("amax", lambda a: a.amax(0), lambda a: a.amax(0), [r(3, 4)]),
    ("reshape", lambda a: a.reshape(3, -1), lambda a: a.reshape(3, -1), [r(2, 3, 2)]),
    ("permute", lambda a: a.permute(2, 0, 1), lambda a: a.permute(2, 0, 1), [r(2, 3, 4)]),
    ("T", lambda a: a.T, lambda a: a.T, [r(2, 3)]),
    ("expand", lambda a: a.expand(3, 2, 4), lambda a: a.expand(3, 2, 4), [r(2, 1)]),
    ("squeeze", lambda a: a.squeeze(1).unsqueeze(0), lambda a: a.squeeze(1).unsqueeze(0), [r(2, 1, 3)]),
    ("getitem", lambda a: a[1:, None, ..., ::2], lambda a: a[1:, None, ..., ::2], [r(3, 4)]),
    ("getitem_int", lambda a, i: a[i], lambda a, i: a[i], [r(4, 2), np.array([0, 2, 0])]),
    (
        "where",
        lambda c, a, b: ember.where(c, a, b),
        lambda c, a, b: __import__("torch").where(c, a, b),
        [np.array([True, False, True]), r(3), r(3)],
    ),
    ("clamp", lambda a: a.clamp(-0.5, 0.5), lambda a: a.clamp(-0.5, 0.5), [r(6)]),
    ("log_softmax", lambda a: F.log_softmax(a, 1), lambda a: a.log_softmax(1), [r(3, 5)]),
    ("softmax", lambda a: F.softmax(a, 0), lambda a: a.softmax(0), [r(3, 5)]),
    (
        "cross_entropy",
        lambda a, t: F.cross_entropy(a, t),
        lambda a, t: __import__("torch").nn.functional.cross_entropy(a, t),
        [r(4, 5), np.array([0, 4, 2, 1])],
    ),
    (
        "mse_loss",
        lambda a, b: F.mse_loss(a, b),
        lambda a, b: __import__("torch").nn.functional.mse_loss(a, b),
        [r(3, 2), r(3, 2)],
    ),
]


@pytest.mark.parametrize("name,fn,tfn,args", CASES, ids=[c[0] for c in CASES])
def test_op(name, fn, tfn, args):
    check_op(fn, *args, torch_fn=tfn, name=name)


def test_promotion_rules():
    f32 = ember.ones(2)
    assert (f32 + 1).dtype == ember.float32
    assert (f32 + ember.ones(2, dtype=ember.float64)).dtype == ember.float64
    i64 = ember.arange(3)
    assert (i64 + 1).dtype == ember.int64
    assert (i64 * 1.5).dtype == ember.float32
    assert (i64 / 2).dtype == ember.float32
    assert (ember.tensor([True]) + 1).dtype == ember.int64
    assert ember.promote_types(ember.int64, ember.float16) == ember.float16
    assert ember.promote_types(ember.float16, ember.bfloat16) == ember.float32


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(4,\)"):
        ember.ones(2, 3) + ember.ones(4)
    with pytest.raises(ValueError, match="not aligned"):
        ember.ones(2, 3) @ ember.ones(2, 3)
    with pytest.raises(ValueError, match=r"item\(\)"):
        ember.ones(3).item()
    with pytest.raises(IndexError, match="out of range for 5 classes"):
        F.cross_entropy(ember.zeros(2, 5), ember.tensor([1, 7]))
    assert ember.zeros(2, dtype=ember.bfloat16, device=ember.backends.get("numpy").device).dtype is ember.bfloat16
    if not ember.cuda.is_available():  # (make test-cuda runs this file on a GPU machine)
        with pytest.raises(RuntimeError, match="cuda"):
            ember.zeros(2, device="cuda")
