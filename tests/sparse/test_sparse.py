"""Sparse COO tensors: construction, coalesce, to_dense/to_sparse, and sparse @ dense with gradients, vs PyTorch."""

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.backends._base import Backend
from ember.testing import assert_close, torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(2)
IDX = np.array([[0, 2, 1, 2, 0, 3], [1, 0, 4, 0, 3, 2]])  # (2, 0) twice: uncoalesced
SIZE = (4, 5)


@pytest.fixture(autouse=True)
def _torch_invariant_checks():
    """Opt in to torch's sparse invariant checks (which also silences its warning about them)."""
    if torch is None:
        yield
        return
    with torch.sparse.check_sparse_tensor_invariants():
        yield


def _vals(dtype="float64"):
    return rng.standard_normal(IDX.shape[1]).astype(dtype)


def test_construction_coalesce_and_dense():
    v = _vals()
    s = ember.sparse_coo_tensor(IDX, v, SIZE)
    assert s.is_sparse and not ember.zeros(1).is_sparse
    assert s.shape == SIZE and s._nnz() == 6 and s.sparse_dim() == 2 and s.dense_dim() == 0
    dense = np.zeros(SIZE)
    np.add.at(dense, (IDX[0], IDX[1]), v)
    assert_close(s.to_dense(), dense, rtol=1e-12)
    with pytest.raises(RuntimeError, match="coalesce"):
        s.indices()
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() == 5
    assert_close(c.to_dense(), dense, rtol=1e-12)
    lin = c.indices().numpy()[0] * SIZE[1] + c.indices().numpy()[1]
    assert np.all(np.diff(lin) > 0)  # sorted, unique
    assert ember.sparse_coo_tensor(IDX, v).shape == (4, 5)  # size inferred
    hybrid = ember.sparse_coo_tensor([[0, 2]], rng.standard_normal((2, 3)), (3, 3))
    assert hybrid.dense_dim() == 1 and hybrid.to_dense().shape == (3, 3)
    assert s.t().shape == (5, 4) and np.array_equal(s.t().to_dense().numpy(), dense.T)


@needs_torch
def test_coalesce_matches_torch():
    v = _vals()
    e = ember.sparse_coo_tensor(IDX, v, SIZE).coalesce()
    t = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(v), SIZE).coalesce()
    assert np.array_equal(e.indices().numpy(), t.indices().numpy())
    assert_close(e.values(), t.values(), rtol=1e-12)


def test_construction_errors():
    with pytest.raises(IndexError, match="for dim 1, size is 5 but found index 7"):
        ember.sparse_coo_tensor([[0, 1], [2, 7]], [1.0, 2.0], (2, 5))
    with pytest.raises(ValueError, match="nonzeros"):
        ember.sparse_coo_tensor([[0, 1], [2, 3]], [1.0, 2.0, 3.0], (2, 5))
    with pytest.raises(ValueError, match="2-d"):
        ember.sparse_coo_tensor([0, 1], [1.0, 2.0])
    with pytest.raises(TypeError, match="integer"):
        ember.sparse_coo_tensor([[0.0, 1.0]], [1.0, 2.0])
    s = ember.sparse_coo_tensor(IDX, _vals("float32"), SIZE)
    with pytest.raises(TypeError, match=r"float32.*float64"):
        ember.sparse.mm(s, ember.zeros(5, 2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        ember.sparse.mm(s, ember.zeros(4, 2))


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("vector", [False, True])
def test_mm_parity_forward_and_gradients(dtype, vector):
    tol = (1e-5, 1e-6) if dtype == "float32" else (1e-12, 1e-12)
    v = _vals(dtype)
    d = rng.standard_normal((5,) if vector else (5, 3)).astype(dtype)
    ev, ed = ember.tensor(v, requires_grad=True), ember.tensor(d, requires_grad=True)
    tv, td = torch.tensor(v, requires_grad=True), torch.tensor(d, requires_grad=True)
    e_out = ember.sparse.mm(ember.sparse_coo_tensor(IDX, ev, SIZE), ed)
    t_s = torch.sparse_coo_tensor(torch.tensor(IDX), tv, SIZE)
    t_out = torch.sparse.mm(t_s, td.unsqueeze(1)).squeeze(1) if vector else torch.sparse.mm(t_s, td)
    assert_close(e_out, t_out, *tol)
    w = rng.standard_normal(tuple(t_out.shape)).astype(dtype)
    (e_out * ember.tensor(w)).sum().backward()
    (t_out * torch.tensor(w)).sum().backward()
    assert_close(ev.grad, tv.grad, *tol)
    assert_close(ed.grad, td.grad, *tol)


def test_mm_gradcheck_float64():
    def f(v, d):
        return ember.sparse.mm(ember.sparse_coo_tensor(IDX, v, SIZE), d)

    args = [ember.tensor(_vals(), requires_grad=True), ember.tensor(rng.standard_normal((5, 2)), requires_grad=True)]
    assert gradcheck(f, args)
    assert gradgradcheck(f, args)


@needs_torch
def test_to_sparse_and_to_dense_are_differentiable():
    x = rng.standard_normal((3, 4)) * (rng.random((3, 4)) < 0.5)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    es, ts = ex.to_sparse(), tx.to_sparse()
    assert np.array_equal(es.indices().numpy(), ts.indices().numpy())
    w = rng.standard_normal((3, 4))
    d = rng.standard_normal((4, 2))
    (ember.sparse.mm(es, ember.tensor(d)) * ember.tensor(w[:, :2])).sum().backward()
    (torch.sparse.mm(ts, torch.tensor(d)) * torch.tensor(w[:, :2])).sum().backward()
    assert_close(ex.grad, tx.grad, rtol=1e-12)
    assert ex.to_dense() is ex  # a dense tensor is its own dense form


def test_reference_kernel_matches_backend_kernel():
    be = ember.zeros(1)._backend
    idx, v, d = (be.from_numpy(a) for a in (IDX, _vals(), rng.standard_normal((5, 3))))
    ref, fast = Backend.spmm(be, idx, v, SIZE, d), be.spmm(idx, v, SIZE, d)
    np.testing.assert_allclose(be.to_numpy(ref), be.to_numpy(fast), rtol=1e-12)


@needs_torch
def test_gcn_training_matches_torch():
    """A two-layer GCN with a normalised sparse adjacency: same losses and weights as PyTorch after SGD steps."""
    n, f, h, c = 6, 4, 5, 3
    edges = np.array([[0, 1, 1, 2, 2, 3, 4, 5, 0, 5], [1, 0, 2, 1, 3, 2, 5, 4, 5, 0]])
    edges = np.concatenate([edges, np.stack([np.arange(n)] * 2)], 1)  # self loops
    deg = np.bincount(edges[0], minlength=n).astype(float)
    vals = 1.0 / np.sqrt(deg[edges[0]] * deg[edges[1]])
    x, y = rng.standard_normal((n, f)), rng.integers(0, c, n)
    w1, w2 = rng.standard_normal((f, h)) * 0.5, rng.standard_normal((h, c)) * 0.5

    def train(lib, sparse_mm):
        adj = lib.sparse_coo_tensor(lib.tensor(edges), lib.tensor(vals), (n, n))
        p1, p2 = lib.tensor(w1, requires_grad=True), lib.tensor(w2, requires_grad=True)
        opt = lib.optim.SGD([p1, p2], lr=0.5)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            hid = lib.relu(sparse_mm(adj, lib.tensor(x) @ p1))
            out = sparse_mm(adj, hid @ p2)
            loss = lib.nn.functional.cross_entropy(out, lib.tensor(y))
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        return losses, p1.detach().numpy()

    e_losses, e_w = train(ember, ember.spmm)
    assert train(ember, ember.mm)[0] == e_losses and train(ember, lambda a, b: a @ b)[0] == e_losses
    t_losses, t_w = train(torch, torch.spmm)
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-10)
    np.testing.assert_allclose(e_w, t_w, rtol=1e-10)
    assert e_losses[-1] < e_losses[0]


def test_legacy_constructor_and_dense_spmm():
    s = ember.sparse.FloatTensor(ember.tensor(IDX), ember.tensor(_vals()), SIZE)
    assert s.dtype == ember.float32 and s.shape == SIZE
    a, b = ember.randn(2, 3), ember.randn(3, 4)
    assert_close(ember.spmm(a, b), a @ b)  # torch.spmm multiplies dense matrices too


@needs_torch
def test_leaf_sparse_tensor_grad_matches_torch():
    v, d = _vals(), rng.standard_normal((5, 2))
    e = ember.sparse_coo_tensor(IDX, v, SIZE, requires_grad=True)
    t = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(v), SIZE, requires_grad=True)
    assert e.requires_grad and e.is_leaf and e.grad is None
    (ember.sparse.mm(e, ember.tensor(d)) ** 2).sum().backward()
    (torch.sparse.mm(t, torch.tensor(d)) ** 2).sum().backward()
    assert e.grad.is_sparse
    assert_close(e.grad.to_dense(), t.grad.to_dense(), rtol=1e-12)
