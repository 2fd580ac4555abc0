"""A recorded node lets go of large input arrays whose values its backward never reads (``autograd/_release.py``),
as PyTorch's nodes keep only what their backward needs; gradients stay exact, and inputs that are read stay kept.
"""

import gc
import weakref

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck
from ember.autograd._release import RELEASE_MIN_BYTES

BIG = 1 << 15  # float64 elements: 256 KiB, above the default threshold


def _ref(t):
    return weakref.ref(t._data)  # a fresh result: its own storage (NumPy array or torch tensor)


def test_an_unread_large_input_is_freed_before_backward():
    x = ember.randn(BIG, dtype=ember.float64, requires_grad=True)
    h = x * 2.0 + 1.0  # read by nobody's backward: tanh keeps its output, add and mul by a number read nothing
    freed = _ref(h)
    y = h.tanh()
    del h
    gc.collect()
    assert freed() is None, "the graph kept tanh's unread input alive"
    y.sum().backward()
    expected = 2 * (1 - np.tanh(2 * np.array(x.tolist()) + 1) ** 2)
    np.testing.assert_allclose(np.array(x.grad.tolist()), expected, rtol=1e-9, atol=1e-15)


def test_inputs_whose_values_backward_reads_are_kept():
    x = ember.randn(BIG, dtype=ember.float64, requires_grad=True)
    w = ember.randn(BIG, dtype=ember.float64, requires_grad=True)
    h = x * 3.0
    kept = _ref(h)
    y = (h * w).sum()  # w's gradient reads h
    del h
    gc.collect()
    assert kept() is not None
    y.backward()
    np.testing.assert_allclose(np.array(w.grad.tolist()), 3 * np.array(x.tolist()), rtol=1e-12)


def test_small_inputs_and_bool_conditions_are_kept():
    x = ember.randn(4, requires_grad=True)
    h = x * 2.0
    y = h.tanh()
    assert y._creator.inputs[0] is h  # below the threshold: nothing replaced
    big = ember.randn(BIG, dtype=ember.float64, requires_grad=True)
    cond = ember.randn(BIG, dtype=ember.float64) > 0  # where's backward reads its condition
    z = ember.where(cond, big, 0.0)
    assert z._creator.inputs[0] is cond


@pytest.fixture
def release_everything():
    old = RELEASE_MIN_BYTES[0]
    RELEASE_MIN_BYTES[0] = 0
    yield
    RELEASE_MIN_BYTES[0] = old


CONST = ember.tensor(np.linspace(0.5, 2.0, 12).reshape(3, 4))
CASES = {
    "add_sub": lambda a, b: (a + b) - (a * 2.0),
    "tanh_sigmoid": lambda a, b: (a * 2.0).tanh() + (b - 1.0).sigmoid(),
    "exp_log": lambda a, b: (a + 3.0).log() * (b * 0.5).exp(),
    "sum_mean": lambda a, b: (a * 1.5).sum(0) * (b + 1.0).mean(0),
    "mul_one_side": lambda a, b: (a + 1.0) * CONST + a * (b + 2.0),  # CONST's value is read, (a + 1)'s is not
    "div": lambda a, b: (a * 2.0) / (b * b + 1.0),
    "matmul": lambda a, b: (a * 2.0) @ (b + 1.0).T,
    "where_relu": lambda a, b: ember.where(a > 0, a * 2.0, b + 1.0).relu(),
    "layer_norm_softmax": lambda a, b: F.softmax(F.layer_norm(a * 2.0, (4,)), dim=-1) * b,
    "einsum": lambda a, b: ember.einsum("ij,kj->ik", a * 2.0, b + 1.0),
    "reshape_view": lambda a, b: (a + 1.0).reshape(4, 3).T.exp() * (b * 2.0).reshape(4, 3).T,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_exact_when_every_unread_input_is_released(name, release_everything):
    rng = np.random.default_rng(0)
    a = ember.tensor(rng.uniform(0.5, 2.0, (3, 4)), requires_grad=True)
    b = ember.tensor(rng.uniform(0.5, 2.0, (3, 4)), requires_grad=True)
    assert gradcheck(CASES[name], (a, b))
