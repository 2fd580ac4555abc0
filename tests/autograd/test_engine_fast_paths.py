"""The engine's and Op.apply's fast paths keep PyTorch's gradients and in-place errors.

A node reached first through a short path must still wait for the gradient coming along a longer one
(the backward pass skips its heap only when that is safe); recorded edges, not ``requires_grad`` at
backward time, decide which inputs get a gradient; version counters made on first use still catch an
in-place change to a saved value, whether the tensor was written directly, through a detached alias or
through a view.
"""

import numpy as np
import pytest

import ember

X0 = [0.5, -1.0, 2.0]


def _grad(t):
    return np.array(t.grad.tolist())


def _short_and_long_path(lib, short_first):
    x = lib.tensor(X0, requires_grad=True)
    y = x * 2.0  # consumed directly (short path) and through tanh * 3 (long path)
    z = y.tanh() * 3.0
    out = (y + z) if short_first else (z + y)
    (out * out).sum().backward()
    return x


@pytest.mark.parametrize("short_first", [True, False])
def test_node_reached_first_by_a_short_path_waits_for_the_long_one(short_first, torch):
    x = _short_and_long_path(ember, short_first)
    xt = _short_and_long_path(torch, short_first)
    y = 2 * np.array(X0)
    out = y + 3 * np.tanh(y)
    expected = 2 * out * (1 + 3 * (1 - np.tanh(y) ** 2)) * 2
    np.testing.assert_allclose(_grad(x), expected, rtol=1e-5)
    np.testing.assert_allclose(_grad(x), xt.grad.numpy(), rtol=1e-5)


def _handed_over_then_queued(lib, create_graph):
    x = lib.tensor(X0, requires_grad=True)
    a = x * 2.0
    b = a * a  # both edges reach a: the gradient handed to the next node is summed
    c = a.tanh().tanh()  # outranks b and a: each is queued (with its gradient) behind c's chain
    (b + c).sum().backward(create_graph=create_graph)
    return x.grad


@pytest.mark.parametrize("create_graph", [False, True])
def test_gradient_handed_to_the_next_node_survives_the_heap(create_graph, torch):
    g, gt = _handed_over_then_queued(ember, create_graph), _handed_over_then_queued(torch, create_graph)
    a = 2 * np.array(X0)
    expected = (2 * a + (1 - np.tanh(np.tanh(a)) ** 2) * (1 - np.tanh(a) ** 2)) * 2
    np.testing.assert_allclose(np.array(g.tolist()), expected, rtol=1e-6)
    np.testing.assert_allclose(np.array(g.tolist()), gt.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_detach_after_use_keeps_the_recorded_edge(op, create_graph, torch):
    def run(lib):
        x = lib.tensor(X0, requires_grad=True)
        y = x * 2.0
        z = getattr(lib, op)(y, 3.0)
        y.detach_()  # the graph already recorded still reaches x (PyTorch)
        z.sum().backward(create_graph=create_graph)
        return x.grad

    g, gt = run(ember), run(torch)
    assert g is not None
    np.testing.assert_allclose(np.array(g.tolist()), gt.detach().numpy(), rtol=1e-6)


def test_saved_input_at_version_zero_written_in_place_raises():
    x = ember.tensor(X0, requires_grad=True)
    y = x * 1.0  # version 0, no counter made yet
    z = y * y  # saves y
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.sum().backward()


def test_saved_input_at_a_later_version_checked_exactly():
    x = ember.tensor(X0, requires_grad=True)
    y = x * 1.0
    y.add_(1.0)  # version 1 when saved
    z = y * y
    z.sum().backward(retain_graph=True)  # unchanged since: fine
    np.testing.assert_allclose(_grad(x), 2 * (np.array(X0) + 1))
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="at version 2, the graph saved version 1"):
        z.sum().backward()


def test_write_through_a_detached_alias_is_seen():
    x = ember.tensor(X0, requires_grad=True)
    y = x * 1.0
    z = y * y
    d = y.detach()  # shares y's version counter, made now
    d.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.sum().backward()


def test_write_through_a_view_of_a_saved_input_is_seen():
    x = ember.tensor(X0, requires_grad=True)
    y = x * 1.0
    z = y * y
    y[1:].mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.sum().backward()


def test_saved_output_written_in_place_raises():
    x = ember.tensor(X0, requires_grad=True)
    y = x.tanh()  # saves its output
    y.mul_(2.0)
    with pytest.raises(RuntimeError, match="output 0 was modified in place"):
        y.sum().backward()


def test_multiply_by_a_scalar_ignores_later_writes_to_the_tensor(torch):
    # y * 4.0 needs no value of y for its gradient: writing y later is allowed (PyTorch)
    def run(lib):
        x = lib.tensor(X0, requires_grad=True)
        y = x * 1.0
        z = y * 4.0
        y.add_(1.0)
        z.sum().backward()
        return x.grad

    np.testing.assert_allclose(np.array(run(ember).tolist()), run(torch).numpy())
