"""``detach_()`` after a tensor was used: the recorded graph stays (PyTorch's rules), run under both.

A non-leaf detached in place still passes gradients through the nodes recorded before; a node that saved
its value for the gradient refuses to run ("Trying to use a saved tensor that has been detached
in-place"); a leaf detached in place collects no gradient; views cannot be detached in place.
"""

import numpy as np
import pytest

import ember

X0 = [[0.5, -1.0, 2.0], [3.0, -0.25, 1.5]]
W0 = [[1.5, 0.25, -2.0], [-0.5, 2.0, 0.75]]


def _lib_f(lib):
    return lib.nn.functional


# f(lib, x, w) -> output; x is the tensor detached in place afterwards, w a leaf that requires grad
OPS = {
    "mul": lambda lib, x, w: x * w,
    "mul_scalar": lambda lib, x, w: x * 2.0 + w,
    "add": lambda lib, x, w: x + w,
    "div": lambda lib, x, w: w / (x + 4.0),
    "maximum": lambda lib, x, w: lib.maximum(x, w),
    "minimum": lambda lib, x, w: lib.minimum(x, w),
    "fmax": lambda lib, x, w: lib.fmax(x, w),
    "pow_scalar": lambda lib, x, w: x**2 + w,
    "pow_tensor": lambda lib, x, w: lib.pow(w.abs() + 1.0, x),
    "remainder": lambda lib, x, w: lib.remainder(x, w),
    "fmod": lambda lib, x, w: lib.fmod(x, w),
    "copysign": lambda lib, x, w: lib.copysign(x, w),
    "xlogy": lambda lib, x, w: lib.xlogy(x, w.abs() + 1.0),
    "logaddexp": lambda lib, x, w: lib.logaddexp(x, w),
    "hypot": lambda lib, x, w: lib.hypot(x, w),
    "atan2": lambda lib, x, w: lib.atan2(x, w),
    "where": lambda lib, x, w: lib.where(w > 0, x, w),
    "floor": lambda lib, x, w: lib.floor(x) + w,
    "lerp": lambda lib, x, w: lib.lerp(x, w, 0.3),
    "tanh": lambda lib, x, w: lib.tanh(x) * w,
    "exp": lambda lib, x, w: lib.exp(x) + w,
    "sin": lambda lib, x, w: lib.sin(x) + w,
    "relu": lambda lib, x, w: lib.relu(x) + w,
    "sigmoid": lambda lib, x, w: lib.sigmoid(x) + w,
    "matmul": lambda lib, x, w: x @ w.T,
    "matmul_x_only": lambda lib, x, w: x @ w.detach().T,
    "einsum": lambda lib, x, w: lib.einsum("ij,kj->ik", x, w),
    "linear": lambda lib, x, w: _lib_f(lib).linear(x, w, w[:, 0]),
    "linear_x_only": lambda lib, x, w: _lib_f(lib).linear(x, w.detach()) * w.sum(),
    "linear_3d": lambda lib, x, w: _lib_f(lib).linear(x[None], w),
    "getitem_mul": lambda lib, x, w: x[0] * w,
    "sum": lambda lib, x, w: x.sum(0) * w,
    "cat": lambda lib, x, w: lib.cat([x, w]),
    "conv1d": lambda lib, x, w: _lib_f(lib).conv1d(x[None], w.T[:, :, None]),
    "conv1d_x_only": lambda lib, x, w: _lib_f(lib).conv1d(x[None], w.detach().T[:, :, None]) * w.sum(),
}


def _run(lib, f, leaf):
    x0 = lib.tensor(X0, dtype=lib.float64, requires_grad=True)
    w = lib.tensor(W0, dtype=lib.float64, requires_grad=True)
    x = x0 if leaf else x0 * 1.0
    y = f(lib, x, w)
    x.detach_()
    try:
        y.sum().backward()
    except RuntimeError as e:
        assert "detached in-place" in str(e)
        return "error"
    return tuple(None if t.grad is None else np.array(t.grad.tolist()) for t in (x0, w))


@pytest.mark.parametrize("leaf", [False, True], ids=["nonleaf", "leaf"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_detach_inplace_after_use_matches_pytorch(name, leaf, torch):
    got, want = _run(ember, OPS[name], leaf), _run(torch, OPS[name], leaf)
    if want == "error" or got == "error":
        assert got == want
        return
    for g, t in zip(got, want, strict=True):
        assert (g is None) == (t is None)
        if g is not None:
            np.testing.assert_allclose(g, t, rtol=1e-12, atol=1e-12)


def test_saved_input_detached_in_place_raises():
    x = ember.tensor(X0, dtype=ember.float64, requires_grad=True)
    h = x * 1.0
    y = ember.maximum(h, 0.5)  # saves h
    h.detach_()
    with pytest.raises(RuntimeError, match=r"Maximum .* detached with detach_"):
        y.sum().backward()


def test_unsaved_input_detached_in_place_still_gets_gradient():
    x = ember.tensor(X0, dtype=ember.float64, requires_grad=True)
    h = x * 1.0
    y = ember.where(ember.tensor([True, False, True]), h, 0.0)  # saves only the condition
    h.detach_()
    y.sum().backward()
    np.testing.assert_array_equal(np.array(x.grad.tolist()), [[1.0, 0.0, 1.0]] * 2)


def test_leaf_detached_in_place_collects_nothing():
    x = ember.tensor(X0, requires_grad=True)
    w = ember.tensor(W0, requires_grad=True)
    y = (x * w).sum()
    x.detach_()
    y.backward()
    assert x.grad is None and not x.requires_grad
    np.testing.assert_allclose(np.array(w.grad.tolist()), X0)


def test_detach_inplace_on_a_view_is_refused():
    base = ember.tensor(X0, requires_grad=True) * 1.0
    for v in (base[1:], base.reshape(3, 2), base.detach()[0]):
        with pytest.raises(RuntimeError, match="can't detach views in place"):
            v.detach_()
    t = ember.tensor(X0)
    assert t.detach_() is t  # not a view: fine
