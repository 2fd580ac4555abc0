"""Registry cases for the ``torch.*`` utilities (issue 14, section 3): gradcheck in float64 and
forward/backward parity with PyTorch in float32 and float64; the counting/searching family is compared
on values (it has no gradient)."""

import numpy as np
import pytest

import ember
from ember.testing import check_op, torch_or_none

rng = np.random.default_rng(15)


def r(*shape):
    return rng.standard_normal(shape)


SPD = r(3, 3) + 3 * np.eye(3)
SPD2 = r(2, 3, 3) + 3 * np.eye(3)
MASK = rng.random((3, 4)) > 0.5


def both(label, fn, args, **kw):
    return (label, lambda *a: fn(ember, *a), lambda *a: fn(__import__("torch"), *a), args, kw)


CASES = [
    both("diff", lambda L, x: x.diff(dim=0), [r(4, 3)]),
    both("diff_n2", lambda L, x, p: L.diff(x, n=2, prepend=p), [r(2, 5), r(2, 1)]),
    both("trace", lambda L, x: x.trace(), [r(3, 4)]),
    both("cross", lambda L, a, b: L.cross(a, b, dim=1), [r(2, 3), r(2, 3)]),
    both("cross_linalg", lambda L, a, b: L.linalg.cross(a, b), [r(4, 3), r(1, 3)]),
    both("kron", lambda L, a, b: L.kron(a, b), [r(2, 3), r(3, 2)]),
    both("kron_1d", lambda L, a, b: L.kron(a, b), [r(3), r(2, 2)]),
    both("tensordot", lambda L, a, b: L.tensordot(a, b, dims=2), [r(2, 3, 4), r(3, 4, 5)]),
    both("tensordot_lists", lambda L, a, b: L.tensordot(a, b, dims=([0, 2], [1, 0])), [r(2, 3, 4), r(4, 2, 5)]),
    both("cdist", lambda L, a, b: L.cdist(a, b), [r(4, 3), r(5, 3)]),
    both("cdist_p1", lambda L, a, b: L.cdist(a, b, p=1.0), [r(2, 4, 3), r(2, 5, 3)]),
    both("addmv", lambda L, c, m, v: L.addmv(c, m, v, beta=0.5, alpha=2), [r(3), r(3, 4), r(4)]),
    both("addr", lambda L, c, a, b: c.addr(a, b, alpha=0.5), [r(3, 4), r(3), r(4)]),
    both("addbmm", lambda L, c, a, b: L.addbmm(c, a, b), [r(3, 5), r(2, 3, 4), r(2, 4, 5)]),
    both("ger", lambda L, a, b: a.ger(b), [r(3), r(2)]),
    both("chain_matmul", lambda L, a, b, c: L.chain_matmul(a, b, c), [r(2, 3), r(3, 4), r(4, 2)]),
    both("atleast_3d", lambda L, a, b, c: L.atleast_3d(a, b, c), [r(3), r(2, 3), r(1, 2, 3)]),
    both("atleast_2d", lambda L, a: L.atleast_2d(a), [r(3)]),
    both("broadcast_tensors", lambda L, a, b: L.broadcast_tensors(a, b), [r(3, 1), r(4)]),
    both("hstack", lambda L, a, b: L.hstack([a, b]), [r(2, 3), r(2, 2)]),
    both("vstack", lambda L, a, b: L.vstack([a, b]), [r(3), r(2, 3)]),
    both("dstack", lambda L, a, b: L.dstack([a, b]), [r(2, 3), r(2, 3)]),
    both("column_stack", lambda L, a, b: L.column_stack([a, b]), [r(3), r(3, 2)]),
    both("tensor_split", lambda L, a: a.tensor_split(3, 1), [r(2, 7)]),
    both("tensor_split_idx", lambda L, a: L.tensor_split(a, [1, 4], dim=0), [r(6, 2)]),
    both("hsplit", lambda L, a: a.hsplit(2), [r(2, 4)]),
    both("vsplit", lambda L, a: L.vsplit(a, [1]), [r(3, 4)]),
    both("dsplit", lambda L, a: a.dsplit(2), [r(2, 2, 4)]),
    both("ravel", lambda L, a: a.t().ravel(), [r(2, 3)]),
    both("select", lambda L, a: a.select(1, -1), [r(2, 3, 4)]),
    both("index_fill", lambda L, a: a.index_fill(1, L.tensor([0, 2]), -1.5), [r(2, 3)]),
    both("block_diag", lambda L, a, b: L.block_diag(a, b), [r(2, 3), r(1, 2)]),
    both("diagflat", lambda L, a: L.diagflat(a, 1), [r(2, 2)]),
    # torch's own vander backward fails (an in-place write it checks): compare the forward, gradcheck ours
    ("vander", lambda x: ember.vander(x, 4), lambda x: __import__("torch").vander(x.detach(), 4), [r(3)], {}),
    ("vander_inc", lambda x: ember.vander(x, increasing=True),
     lambda x: __import__("torch").vander(x.detach(), increasing=True), [r(3)], {}),
    both("cov", lambda L, x: L.cov(x), [r(3, 6)]),
    both("cov_c0", lambda L, x: x.cov(correction=0), [r(6)]),
    both("corrcoef", lambda L, x: L.corrcoef(x), [r(3, 6)]),
    both("trapezoid", lambda L, y: L.trapezoid(y, dx=0.5), [r(3, 5)]),
    both("trapezoid_x", lambda L, y, x: L.trapezoid(y, x, dim=0), [r(4, 2), np.sort(r(4))]),
    # copies with replaced elements
    both("index_copy", lambda L, x, s: x.index_copy(1, L.tensor([2, 0]), s), [r(3, 4), r(3, 2)]),
    both("masked_scatter", lambda L, x, s: x.masked_scatter(L.tensor(MASK), s), [r(3, 4), r(12)]),
    both("masked_scatter_bcast", lambda L, x, s: L.masked_scatter(x, L.tensor(MASK[0]), s), [r(3, 4), r(12)]),
    both("renorm", lambda L, x: x.renorm(2, 0, 1.0), [r(3, 4)]),
    both("renorm_p1", lambda L, x: L.renorm(x, 1, 1, 1.5), [r(3, 4, 2)]),
    # dense linear algebra
    both("inv", lambda L, a: L.linalg.inv(a), [SPD], second_order=True),
    both("inverse_batched", lambda L, a: a.inverse(), [SPD2]),
    both("det", lambda L, a: L.det(a), [SPD]),
    both("det_batched", lambda L, a: L.linalg.det(a), [SPD2]),
    both("slogdet", lambda L, a: tuple(L.linalg.slogdet(a)), [-SPD]),
    both("logdet", lambda L, a: a.logdet(), [SPD]),
    both("solve", lambda L, a, b: L.linalg.solve(a, b), [SPD, r(3, 2)]),
    both("solve_vec", lambda L, a, b: L.linalg.solve(a, b), [SPD, r(3)]),
    both("solve_right", lambda L, a, b: L.linalg.solve(a, b, left=False), [SPD, r(2, 3)]),
    both("matrix_power", lambda L, a: L.linalg.matrix_power(a, 3), [r(3, 3)]),
    both("matrix_power_neg", lambda L, a: a.matrix_power(-2), [SPD]),
    both("pinv_tall", lambda L, a: L.linalg.pinv(a), [r(4, 2)]),
    both("pinverse_wide", lambda L, a: a.pinverse(), [r(2, 4)]),
    both("multi_dot", lambda L, a, b, c: L.linalg.multi_dot([a, b, c]), [r(2, 3), r(3, 4), r(4)]),
    both("type_as", lambda L, a, b: a.type_as(b), [r(3), r(2).astype(np.float32)]),
]  # fmt: skip


@pytest.mark.parametrize("name,fn,tfn,args,kw", CASES, ids=[c[0] for c in CASES])
def test_op(name, fn, tfn, args, kw):
    check_op(fn, *args, torch_fn=tfn, name=name, **kw)


COUNTING = [
    lambda L: L.argwhere(L.tensor([[0, 1], [2, 0]])),
    lambda L: L.bincount(L.tensor([0, 3, 3, 1])),
    lambda L: L.bincount(L.tensor([0, 3, 3, 1]), minlength=6),
    lambda L: L.bincount(L.tensor([0, 2, 2]), weights=L.tensor([0.5, 1.0, 2.0])),
    lambda L: L.histc(L.tensor([0.0, 1.0, 1.5, 2.0, 5.0, -1.0]), bins=4, min=0, max=4),
    lambda L: L.histc(L.tensor([0.0, 1.0, 1.5, 2.0, 5.0]), bins=3),
    lambda L: L.searchsorted(L.tensor([1, 3, 5, 7]), L.tensor([0, 3, 6, 9])),
    lambda L: L.searchsorted(L.tensor([1, 3, 5, 7]), L.tensor([3, 7]), right=True),
    lambda L: L.searchsorted(L.tensor([[1, 3, 5], [2, 4, 6]]), L.tensor([[3, 6], [1, 5]])),
    lambda L: L.bucketize(L.tensor([[0.5, 3.0], [9.0, 1.0]]), L.tensor([1.0, 3.0, 5.0])),
    lambda L: L.bucketize(L.tensor([1.0, 3.0]), L.tensor([1.0, 3.0, 5.0]), right=True),
    lambda L: L.isin(L.tensor([1, 2, 3, 4]), L.tensor([2, 4])),
    lambda L: L.isin(L.tensor([1, 2, 3, 4]), L.tensor([2, 4]), invert=True),
    lambda L: L.tril_indices(3, 4, 1),
    lambda L: L.triu_indices(4, 3, -1),
    lambda L: L.logspace(0, 2, 5),
    lambda L: L.logspace(0, 3, 4, base=2.0),
    lambda L: L.tensor([[1.0, 2.0], [3.0, 4.0]]).diff(append=L.tensor([[9.0], [9.0]])),
    lambda L: L.tensor([True, False, False]).diff(),
    lambda L: L.unique_consecutive(L.tensor([1, 1, 2, 2, 3, 1, 1, 2])),
    lambda L: L.unique_consecutive(L.tensor([[1, 1], [2, 2], [1, 2]]), return_inverse=True)[1],
    lambda L: L.unique_consecutive(L.tensor([[1, 1], [1, 1], [2, 3]]), return_counts=True, dim=0)[0],
    lambda L: L.unique_consecutive(L.tensor([[1, 1], [1, 1], [2, 3]]), return_counts=True, dim=0)[1],
]


@pytest.mark.skipif(torch_or_none() is None, reason="torch not installed")
@pytest.mark.parametrize("k", range(len(COUNTING)))
def test_counting_and_searching(k):
    import torch

    e, t = COUNTING[k](ember), COUNTING[k](torch)
    assert e.dtype.name == str(t.dtype).replace("torch.", "").replace("ember.", "")
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.numpy().astype(float), t.numpy().astype(float), rtol=1e-6)
