"""A leaf reached along several paths of one first-order backward: the engine sums its gradients in a buffer of
its own and hands the sum to the leaf once (``autograd/_engine.py``), never writing into an array someone else
holds; a leaf's hooks see that sum, once, as PyTorch's do."""

import numpy as np
import pytest

import ember


def test_sum_of_paths_leaves_the_callers_gradient_and_old_grad_untouched():
    x = ember.tensor([1.0, -2.0, 3.0], requires_grad=True)
    old = ember.tensor([10.0, 10.0, 10.0])
    x.grad = old
    gu = ember.tensor([1.0, 2.0, 4.0])
    (x + x + x).backward(gu)  # each add hands the caller's gradient array on unchanged: three paths, one array
    np.testing.assert_array_equal(gu.numpy(), [1.0, 2.0, 4.0])
    np.testing.assert_array_equal(old.numpy(), [10.0, 10.0, 10.0])
    np.testing.assert_array_equal(x.grad.numpy(), [13.0, 16.0, 22.0])
    assert not np.shares_memory(x.grad.numpy(), gu.numpy())


def test_two_leaves_given_the_same_array_get_their_own():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([3.0, 4.0], requires_grad=True)
    (a + b + a).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0])
    a.grad.add_(1.0)  # the optimizers update grads in place: b's must not move
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0])


def test_zero_d_leaf_and_weights_shared_by_steps():
    x = ember.tensor(2.0, requires_grad=True)
    (x * x + x).backward()  # 3 paths into a 0-d leaf
    assert x.grad.item() == 5.0 and x.grad.shape == ()
    ember.manual_seed(0)
    cell = ember.nn.RNNCell(3, 4).double()
    h = ember.zeros(2, 4, dtype=ember.float64)
    for _ in range(4):
        h = cell(ember.ones(2, 3, dtype=ember.float64), h)
    h.sum().backward()
    w = cell.weight_hh.grad
    assert w._backend.is_plain(w._data)  # private, contiguous: the optimizers update it in place


def _hook_run(lib, create_graph):
    """A leaf on two paths whose hook clips its gradient: what the hook saw, the leaf's grad, another leaf's."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([0.5, -1.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.detach().numpy().copy()) or g.clamp(-4.0, 4.0))
    (x * 2.0 + x * w * 3.0 + (x * x).sum()).sum().backward(create_graph=create_graph)
    return [s.tolist() for s in seen], x.grad.detach().numpy().tolist(), w.grad.detach().numpy().tolist()


@pytest.mark.parametrize("create_graph", [False, True])
def test_hooks_see_the_sum_of_paths_once_as_in_torch(create_graph):
    torch = pytest.importorskip("torch")
    got, want = _hook_run(ember, create_graph), _hook_run(torch, create_graph)
    assert got == want
    assert len(got[0]) == 1 and got[1] == [4.0, 4.0]  # one call, on the sum (5.5, 5.0), clipped


def test_hooks_on_a_leaf_and_grad_returns_the_sum():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    (x * 2.0 + x * 3.0).sum().backward()
    assert len(seen) == 1 and seen[0].tolist() == [5.0, 5.0]
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0])
    y = ember.tensor([1.0, 2.0], requires_grad=True)
    (gy,) = ember.autograd.grad((y * y + y).sum(), y)
    np.testing.assert_array_equal(gy.numpy(), [3.0, 5.0])
    (gg,) = ember.autograd.grad((y * y * y).sum(), y, create_graph=True)  # Tensor path: second order still works
    (g2,) = ember.autograd.grad(gg.sum(), y)
    np.testing.assert_allclose(g2.numpy(), [6.0, 12.0])
