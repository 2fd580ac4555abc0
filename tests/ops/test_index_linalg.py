"""Index-driven operators and linear algebra: gradcheck + PyTorch parity, and their errors."""

import numpy as np
import pytest

import ember
from ember.testing import check_op, torch_or_none

rng = np.random.default_rng(2)


def r(*shape):
    return rng.standard_normal(shape)


def idx(hi, *shape):
    return rng.integers(0, hi, shape)


def T():
    return __import__("torch")


CASES = [
    ("gather", lambda x, i: x.gather(1, i), lambda x, i: x.gather(1, i), [r(3, 4), idx(4, 3, 5)]),
    ("gather_small", lambda x, i: ember.gather(x, 0, i), lambda x, i: T().gather(x, 0, i), [r(4, 3), idx(4, 2, 2)]),
    ("scatter", lambda x, s: x.scatter(0, ember.tensor([[0, 2, 1]]), s),
     lambda x, s: x.scatter(0, T().tensor([[0, 2, 1]]), s), [r(3, 3), r(1, 3)]),
    ("scatter_value", lambda x: x.scatter(1, ember.tensor([[0], [2]]), value=1.5),
     lambda x: x.scatter(1, T().tensor([[0], [2]]), value=1.5), [r(2, 3)]),
    ("scatter_add", lambda x, s, i: x.scatter_add(0, i, s), lambda x, s, i: x.scatter_add(0, i, s),
     [r(3, 4), r(5, 4), idx(3, 5, 4)]),
    ("index_select", lambda x, i: x.index_select(1, i), lambda x, i: x.index_select(1, i), [r(3, 4), idx(4, 6)]),
    ("index_add", lambda x, s, i: x.index_add(0, i, s, alpha=2.0), lambda x, s, i: x.index_add(0, i, s, alpha=2.0),
     [r(3, 2), r(5, 2), idx(3, 5)]),
    ("masked_fill", lambda x, m: x.masked_fill(m, -1.0), lambda x, m: x.masked_fill(m, -1.0),
     [r(3, 4), rng.random((1, 4)) > 0.5]),
    ("masked_select", lambda x, m: x.masked_select(m), lambda x, m: x.masked_select(m), [r(3, 4), rng.random(4) > 0.3]),
    ("take_along_dim", lambda x, i: ember.take_along_dim(x, i, 1), lambda x, i: T().take_along_dim(x, i, 1),
     [r(3, 4), idx(4, 1, 2)]),
    ("take_along_dim_flat", lambda x, i: ember.take_along_dim(x, i), lambda x, i: T().take_along_dim(x, i),
     [r(3, 4), idx(12, 5)]),
    ("take", lambda x, i: ember.take(x, i), lambda x, i: T().take(x, i), [r(3, 4), idx(12, 2, 2)]),
    ("sort", lambda x: tuple(x.sort(1)), lambda x: tuple(x.sort(1)), [r(3, 5)]),
    ("sort_desc", lambda x: tuple(x.sort(0, descending=True)), lambda x: tuple(x.sort(0, descending=True)),
     [r(4, 3)]),
    ("topk", lambda x: tuple(x.topk(2)), lambda x: tuple(x.topk(2)), [r(3, 5)]),
    ("topk_small", lambda x: tuple(x.topk(3, dim=0, largest=False)), lambda x: tuple(x.topk(3, dim=0, largest=False)),
     [r(4, 3)]),
    ("dot", lambda a, b: a.dot(b), lambda a, b: a.dot(b), [r(4), r(4)]),
    ("outer", lambda a, b: a.outer(b), lambda a, b: a.outer(b), [r(3), r(4)]),
    ("inner", lambda a, b: a.inner(b), lambda a, b: a.inner(b), [r(2, 3), r(4, 3)]),
    ("mv", lambda a, b: a.mv(b), lambda a, b: a.mv(b), [r(2, 3), r(3)]),
    ("addmm", lambda c, a, b: c.addmm(a, b, beta=0.5, alpha=2), lambda c, a, b: c.addmm(a, b, beta=0.5, alpha=2),
     [r(1, 4), r(2, 3), r(3, 4)]),
    ("baddbmm", lambda c, a, b: c.baddbmm(a, b, alpha=0.5), lambda c, a, b: c.baddbmm(a, b, alpha=0.5),
     [r(2, 2, 4), r(2, 2, 3), r(2, 3, 4)]),
]  # fmt: skip
REDUCES = ["sum", "prod", "mean", "amax", "amin"]
EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk", [(2, 2, 3), (2, 3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),
    ("i,j->ij", [(3,), (2,)]),
    ("iji->j", [(2, 3, 2)]),
    ("ij,k->ik", [(2, 3), (4,)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
]


@pytest.mark.parametrize("name,fn,tfn,args", CASES, ids=[c[0] for c in CASES])
def test_op(name, fn, tfn, args):
    check_op(fn, *args, torch_fn=tfn, name=name)


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    i = np.array([[0, 1, 0, 2], [2, 0, 0, 1]])
    # distinct values keep amax/amin differentiable; a zero in src exercises prod's exact gradient
    x, s = r(3, 4), r(2, 4)
    if reduce == "prod":
        s[0, 2] = 0.0
    check_op(
        lambda x, s: x.scatter_reduce(0, ember.tensor(i), s, reduce, include_self=include_self),
        x,
        s,
        torch_fn=lambda x, s: x.scatter_reduce(0, T().tensor(i), s, reduce, include_self=include_self),
        name=f"scatter_reduce_{reduce}",
    )


def test_scatter_reduce_ties_share_the_gradient():
    x = ember.tensor([1.0, 5.0], requires_grad=True)
    s = ember.tensor([5.0, 2.0], requires_grad=True)
    out = x.scatter_reduce(0, ember.tensor([1, 0]), s, "amax")
    assert out.tolist() == [2.0, 5.0]
    out.sum().backward()
    assert x.grad.tolist() == [0.0, 0.5] and s.grad.tolist() == [0.5, 1.0]


@pytest.mark.parametrize("eq,shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum(eq, shapes):
    args = [r(*s) for s in shapes]
    check_op(lambda *a: ember.einsum(eq, *a), *args, torch_fn=lambda *a: T().einsum(eq, *a), name=eq)


def test_einsum_second_order():
    check_op(lambda a, b: ember.einsum("ij,jk->", a, b) ** 2, r(2, 3), r(3, 2), second_order=True, name="einsum2")


def test_sort_is_stable_and_handles_nan_and_ints():
    x = ember.tensor([2.0, float("nan"), 1.0, 2.0])
    assert x.sort().indices.tolist() == [2, 0, 3, 1]
    assert x.sort(descending=True).indices.tolist() == [1, 0, 3, 2]
    assert ember.tensor([3, 1, 2], dtype=ember.uint8).argsort(descending=True).tolist() == [0, 2, 1]
    assert ember.tensor([True, False, True]).argsort().tolist() == [1, 0, 2]


def test_unique():
    x = ember.tensor([[3, 1], [3, 2]])
    vals, inv, counts = ember.unique(x, return_inverse=True, return_counts=True)
    assert vals.tolist() == [1, 2, 3] and inv.tolist() == [[2, 0], [2, 1]] and counts.tolist() == [1, 1, 2]
    rows = ember.unique(ember.tensor([[1, 2], [0, 1], [1, 2]]), dim=0)
    assert rows.tolist() == [[0, 1], [1, 2]]


def test_inplace_methods():
    x = ember.arange(6.0).reshape(2, 3)
    y = x[0]
    x.clamp_(1, 4)
    assert y.tolist() == [1.0, 1.0, 2.0]  # views see the write
    x.masked_fill_(x > 3, 0.0).mul_(2)
    assert x.tolist() == [[2.0, 2.0, 4.0], [6.0, 0.0, 0.0]]
    x.scatter_add_(1, ember.tensor([[0, 0]]), ember.ones(1, 2))
    assert x.tolist()[0] == [4.0, 2.0, 4.0]
    with pytest.raises(AttributeError, match="sum_"):
        x.sum_()


def test_inplace_method_is_differentiable():
    w = ember.tensor([1.0, -2.0, 3.0], requires_grad=True)
    h = w * 2
    h.clamp_(min=0)
    h.sum().backward()
    assert w.grad.tolist() == [2.0, 0.0, 2.0]


def test_errors_name_the_problem():
    x = ember.zeros(3, 4)
    with pytest.raises(IndexError, match=r"gather: index out of range for dim 1 of size 4"):
        x.gather(1, ember.tensor([[4]]))
    with pytest.raises(ValueError, match="gather: index has rank 1"):
        x.gather(1, ember.tensor([1]))
    with pytest.raises(TypeError, match="integer tensor"):
        x.index_select(0, ember.tensor([0.0]))
    with pytest.raises(TypeError, match="masked_fill: mask must be a bool tensor"):
        x.masked_fill(ember.ones(3, 4), 0.0)
    with pytest.raises(ValueError, match="scatter_reduce: reduce must be one of"):
        x.scatter_reduce(0, ember.tensor([[0]]), ember.ones(1, 1), "max")
    with pytest.raises(ValueError, match="topk: k=5"):
        x.topk(5)
    with pytest.raises(ValueError, match="subscript 'j' has size 4 in one operand and 3"):
        ember.einsum("ij,jk->ik", x, ember.zeros(3, 2))
    with pytest.raises(ValueError, match="index_add: source shape"):
        x.index_add(0, ember.tensor([0, 1]), ember.ones(3, 4))
    with pytest.raises(ValueError, match="dot: expected two 1-d"):
        ember.dot(ember.ones(3), ember.ones(4))


@pytest.mark.skipif(torch_or_none() is None, reason="torch not installed")
def test_one_hot_matches_torch():
    import torch

    import ember.nn.functional as F

    t = np.array([[0, 3], [2, 1]])
    assert F.one_hot(ember.tensor(t)).tolist() == torch.nn.functional.one_hot(torch.tensor(t)).tolist()
    assert F.one_hot(ember.tensor(t), 6).shape == (2, 2, 6)
    with pytest.raises(ValueError, match="one_hot: class values must be in"):
        F.one_hot(ember.tensor([5]), 3)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_uint8_index_is_integers_on_every_backend(backend):
    # torch's own indexing reads a uint8 array as a mask: gather & co. must not hand it one (it gave [1, 3] here)
    if backend == "torch" and torch_or_none() is None:
        pytest.skip("torch not installed")
    dev = ember.backends.get(backend).device
    x = ember.tensor([1.0, 2.0, 3.0], device=dev, requires_grad=True)
    ops = {
        "gather": lambda i: ember.gather(x, 0, i),
        "take": lambda i: ember.take(x, i),
        "index_select": lambda i: ember.index_select(x, 0, i),
        "take_along_dim": lambda i: ember.take_along_dim(x, i, 0),
        "scatter_add": lambda i: ember.scatter_add(x, 0, i, ember.ones(len(i), device=dev)),
        "index_add": lambda i: ember.index_add(x, 0, i, ember.ones(len(i), device=dev)),
        "index_fill": lambda i: ember.index_fill(x, 0, i, 5.0),
    }
    for name, f in ops.items():
        for idx in ([1, 0, 1], []):
            want = f(ember.tensor(idx, dtype=ember.int64, device=dev))
            got = f(ember.tensor(idx, dtype=ember.uint8, device=dev))
            assert got.tolist() == want.tolist(), (name, idx)
            (g,) = ember.autograd.grad(got.sum(), x)
            (gw,) = ember.autograd.grad(want.sum(), x)
            assert g.tolist() == gw.tolist(), (name, idx)
