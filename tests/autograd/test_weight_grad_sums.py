"""Weight gradients handed to the engine uncomputed (``backends/_weight_grad.py``, ``autograd/_leaf_sums.py``):
the torch backend's cells return ``WeightGrad``s, which a leaf's running sum takes as one accumulating product;
anywhere else (a weight that is not a leaf, a leaf with hooks, ``autograd.grad``, anomaly mode, a weight also used
by another operator first or last) they are computed first. Every case against PyTorch, float64."""

import numpy as np
import pytest

import ember
from ember import backends
from ember.autograd._leaf_sums import add_leaf_grad, leaf_sum
from ember.backends._weight_grad import WeightGrad, grad_array

torch = pytest.importorskip("torch")

N, IN, H, STEPS = 4, 3, 5, 4


def _weights(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=g, dtype=torch.float64) for s in ((4 * H, IN), (4 * H, H), (4 * H,), (4 * H,))]


def _x(seed=1):
    return torch.randn(STEPS, N, IN, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _torch_loss(ws, extra=None):
    x, h, c = _x(), torch.zeros(N, H, dtype=torch.float64), torch.zeros(N, H, dtype=torch.float64)
    w = list(ws) if extra is None else [extra(ws[0]), *ws[1:]]
    loss = 0
    for t in range(STEPS):
        h, c = torch.lstm_cell(x[t], (h, c), *w)
        loss = loss + (h * h).sum() + c.sum()
    return loss


def _ember_loss(ws, extra=None):
    x = ember.tensor(_x().numpy())
    h = c = ember.zeros(N, H, dtype=ember.float64)
    w = list(ws) if extra is None else [extra(ws[0]), *ws[1:]]
    cell = ember.nn._rnn_ops.lstm_cell
    loss = 0
    for t in range(STEPS):
        h, c = cell(x[t], h, c, *w)
        loss = loss + (h * h).sum() + c.sum()
    return loss


def _pair(extra_t=None, extra_e=None):
    ref = [w.clone().requires_grad_() for w in _weights()]
    _torch_loss(ref, extra_t).backward()
    ps = [ember.tensor(w.numpy(), requires_grad=True) for w in _weights()]
    return ref, ps, _ember_loss(ps, extra_e)


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got), want.detach().numpy(), rtol=1e-12, atol=1e-12)


@pytest.fixture(autouse=True)
def _torch_backend():
    with backends.use("torch"):
        yield


def test_cells_hand_over_weight_grads_and_the_leaf_sums_equal_torch():
    ref, ps, loss = _pair()
    node = loss._creator
    while type(node).__name__ != "LSTMCellStep":  # the last step's node, reached through the loss's sums
        node = next(e for e in node._edges if e is not None and not isinstance(e, tuple))
    gh = torch.ones(N, H, dtype=torch.float64, device=ps[0]._data.device)  # the cell's device (cuda in test-cuda)
    out = node.backward_arrays(gh, gh)
    assert isinstance(out[3], WeightGrad) and isinstance(out[4], WeightGrad)  # the path this file is about
    loss.backward()
    for p, r in zip(ps, ref, strict=True):
        assert p.grad._data.is_contiguous()
        _close(p.grad.numpy(), r.grad)


@pytest.mark.parametrize("where", ["first", "last"])
def test_a_weight_also_used_by_another_operator(where):
    """The other operator's array gradient reaches the sum first (its node runs first) or last."""
    ref = [w.clone().requires_grad_() for w in _weights()]
    ps = [ember.tensor(w.numpy(), requires_grad=True) for w in _weights()]
    if where == "first":
        (_torch_loss(ref) + (ref[1] ** 2).sum()).backward()
        (_ember_loss(ps) + (ps[1] ** 2).sum()).backward()
    else:
        (_torch_loss(ref) * (ref[1] ** 2).sum()).backward()
        (_ember_loss(ps) * (ps[1] ** 2).sum()).backward()
    for p, r in zip(ps, ref, strict=True):
        _close(p.grad.numpy(), r.grad)


def test_a_weight_that_is_not_a_leaf_gets_arrays():
    ref, ps, loss = _pair(lambda w: w * 2.0, lambda w: w * 2.0)
    loss.backward()
    for p, r in zip(ps, ref, strict=True):
        _close(p.grad.numpy(), r.grad)


def test_a_leaf_with_a_hook_sees_the_steps_summed_once():
    seen = []
    ref, ps, loss = _pair()
    ps[1].register_hook(lambda g: seen.append(g) or g * 1.0)
    loss.backward()
    assert len(seen) == 1 and isinstance(seen[0], ember.Tensor)  # PyTorch's hook runs once, on the sum
    _close(seen[0].numpy(), ref[1].grad)
    _close(ps[1].grad.numpy(), ref[1].grad)


def test_autograd_grad_and_an_existing_grad():
    ref, ps, loss = _pair()
    got = ember.autograd.grad(loss, ps, retain_graph=True)
    for g, r in zip(got, ref, strict=True):
        _close(g.numpy(), r.grad)
    assert got[2]._data.data_ptr() != got[3]._data.data_ptr()  # the two biases' gradients are separate arrays
    ps[0].grad = ember.ones(4 * H, IN, dtype=ember.float64)
    loss.backward()
    _close(ps[0].grad.numpy() - 1.0, ref[0].grad)


def test_anomaly_mode_and_create_graph():
    ref, ps, loss = _pair()
    with ember.autograd.detect_anomaly():
        loss.backward(retain_graph=True)
    for p, r in zip(ps, ref, strict=True):
        _close(p.grad.numpy(), r.grad)
    (g,) = ember.autograd.grad(loss, [ps[1]], create_graph=True)
    _close(g.detach().numpy(), ref[1].grad)


def test_the_sums_never_write_into_given_arrays():
    be = backends.get("torch")
    leaf = ember.zeros(2, 3, dtype=ember.float64, requires_grad=True)
    dz, x = torch.randn(4, 2, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)
    given = torch.ones(2, 3, dtype=torch.float64)
    keep = given.clone()
    for first in ("array", "weight_grad"):
        sums: dict = {}
        parts = [given, WeightGrad(dz, x, be), WeightGrad(dz, x, be), given]
        if first == "weight_grad":
            parts = parts[1:] + parts[:1]
        for p in parts:
            add_leaf_grad(sums, leaf, p)
        total = leaf_sum(sums[id(leaf)])._data
        torch.testing.assert_close(total, 2 * keep + 2 * dz.t() @ x, rtol=1e-14, atol=1e-14)
        assert torch.equal(given, keep) and total.data_ptr() != given.data_ptr()
    sums = {}
    add_leaf_grad(sums, leaf, WeightGrad(dz, x, be))  # alone: computed when delivered
    torch.testing.assert_close(leaf_sum(sums[id(leaf)])._data, dz.t() @ x, rtol=1e-14, atol=1e-14)
    assert grad_array(given) is given
