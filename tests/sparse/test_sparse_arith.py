"""Sparse COO arithmetic, run the same way under Ember and PyTorch: layouts of results, values, gradients."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks")  # torch's note on its first COO tensor

IDX = np.array([[0, 1, 1, 2], [2, 0, 2, 1]])
VALS = np.array([1.0, -2.0, 3.0, 0.5])


def _dense(x):
    x = x.to_dense() if getattr(x, "is_sparse", False) or getattr(x, "layout", None) == torch.sparse_coo else x
    return x.detach().numpy()


def _sparse(L, vals):
    return L.sparse_coo_tensor(L.tensor(IDX), vals, (3, 3))


CASES = {
    "sparse+sparse": lambda L, s, d: s + s,
    "sparse-sparse": lambda L, s, d: s - s * 2,
    "dense+sparse": lambda L, s, d: d + s,
    "dense-sparse": lambda L, s, d: d - s,
    "sparse*scalar": lambda L, s, d: s * 3,
    "scalar*sparse": lambda L, s, d: 3 * s,
    "sparse/scalar": lambda L, s, d: s / 4,
    "sparse*dense": lambda L, s, d: s * d,
    "dense*sparse": lambda L, s, d: d * s,
    "-sparse": lambda L, s, d: -s,
    "sparse.sum": lambda L, s, d: L.sparse.sum(s),
    "sparse.sum(dim)": lambda L, s, d: L.sparse.sum(s, 1),
    "adj+eye": lambda L, s, d: s + L.eye(3).to_sparse(),
    "mm": lambda L, s, d: L.sparse.mm(s, d),
}


@pytest.mark.parametrize("name", list(CASES))
def test_sparse_arithmetic_matches_torch(name):
    out = []
    for L in (ember, torch):
        vals = L.tensor(VALS, requires_grad=True)
        dense = L.tensor(np.arange(9.0).reshape(3, 3) / 9, requires_grad=True)
        r = CASES[name](L, _sparse(L, vals), dense)
        sparse = getattr(r, "is_sparse", False) or getattr(r, "layout", None) == torch.sparse_coo
        d = r.to_dense() if sparse else r
        (d * L.tensor(np.arange(float(d.numel())).reshape(tuple(d.shape)))).sum().backward()
        out.append((sparse, _dense(r), _dense(vals.grad), None if dense.grad is None else _dense(dense.grad)))
    assert out[0][0] == out[1][0], "layout"
    for a, b in zip(out[0][1:], out[1][1:], strict=True):
        if b is None or a is None:
            assert a is None or not np.any(a)
            continue
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12)


def test_sparse_plus_dense_is_refused_as_in_torch():
    for L in (ember, torch):
        s = _sparse(L, L.tensor(VALS))
        with pytest.raises((TypeError, RuntimeError), match="add\\(sparse, dense\\) is not supported"):
            s + L.ones(3, 3)


def test_to_dense_round_trip_and_sparse_sum_layouts():
    s = ember.sparse_coo_tensor(ember.tensor([[0, 1, 1], [2, 0, 2]]), ember.tensor([[1.0, 2], [3, 4], [5, 6]]),
                                (2, 3, 2))  # fmt: skip
    t = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]), torch.tensor([[1.0, 2], [3, 4], [5, 6]]),
                                (2, 3, 2))  # fmt: skip
    assert s.to_dense().to_sparse().to_dense().tolist() == s.to_dense().tolist()
    for dim in (None, 0, 1, 2, (0, 1), (0, 2), (1, 2), (0, 1, 2)):
        e = ember.sparse.sum(s) if dim is None else ember.sparse.sum(s, dim)
        w = torch.sparse.sum(t) if dim is None else torch.sparse.sum(t, dim)
        assert getattr(e, "is_sparse", False) == (w.layout == torch.sparse_coo), dim
        np.testing.assert_allclose(_dense(e), _dense(w))
