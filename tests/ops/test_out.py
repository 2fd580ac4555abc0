"""``out=`` and ``nelement``, run the same way under Ember and PyTorch: the result lands in ``out`` (which is
returned), ``out`` is resized as PyTorch resizes it (warning unless it was empty), and the refusals agree."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

A = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
B = (np.arange(6, dtype=np.float32).reshape(2, 3) - 2) / 5

CASES = {
    "add": lambda L, a, b, o: L.add(a, b, out=o),
    "add_alpha": lambda L, a, b, o: L.add(a, b, alpha=2, out=o),
    "mul": lambda L, a, b, o: L.mul(a, b, out=o),
    "sub": lambda L, a, b, o: L.sub(a, b, out=o),
    "div": lambda L, a, b, o: L.div(a, b + 1, out=o),
    "matmul": lambda L, a, b, o: L.matmul(a, b.t(), out=o),
    "mm": lambda L, a, b, o: L.mm(a.t(), b, out=o),
    "cat": lambda L, a, b, o: L.cat([a, b], 1, out=o),
    "stack": lambda L, a, b, o: L.stack([a, b], 0, out=o),
    "sum": lambda L, a, b, o: L.sum(a, 1, out=o),
    "mean": lambda L, a, b, o: L.mean(a, 0, keepdim=True, out=o),
    "exp": lambda L, a, b, o: L.exp(a, out=o),
    "clamp": lambda L, a, b, o: L.clamp(b, -0.1, 0.1, out=o),
    "where": lambda L, a, b, o: L.where(a > 0.3, a, b, out=o),
    "pow": lambda L, a, b, o: L.pow(a, 2, out=o),
    "cumsum": lambda L, a, b, o: L.cumsum(a, 1, out=o),
    "gather": lambda L, a, b, o: L.gather(a, 1, L.tensor([[0, 2], [1, 1]]), out=o),
    "eq_into_float": lambda L, a, b, o: L.eq(a, a * 1, out=o),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("start", ["empty", "right", "wrong"])
def test_out_matches_torch(name, start):
    fn = CASES[name]
    results = []
    for L in (ember, torch):
        a, b = L.tensor(A), L.tensor(B)
        want = fn(L, a, b, None)
        o = {"empty": L.empty(0), "right": L.zeros(*want.shape), "wrong": L.zeros(7)}[start]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = fn(L, a, b, o)
        assert got is o
        resized = [w for w in caught if "was resized" in str(w.message)]
        results.append((o.numpy().copy(), tuple(o.shape), len(resized)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    assert results[0][1:] == results[1][1:]


def test_tuple_outputs_and_index_dtypes_as_torch():
    for L in (ember, torch):
        x = L.tensor(A)
        v, i = L.empty(0), L.empty(0, dtype=L.int64)
        r = L.max(x, 1, out=(v, i))
        assert r[0] is v and r[1] is i and i.tolist() == [2, 2]
        s, j = L.zeros(2, 3), L.zeros(2, 3, dtype=L.int64)
        L.sort(-x, 1, out=(s, j))
        assert j.tolist() == [[2, 1, 0], [2, 1, 0]]
        with pytest.raises(RuntimeError):
            L.argmax(x, 1, out=L.empty(2))  # indices go into an int64 tensor only


def test_refusals_agree_with_torch():
    for L in (ember, torch):
        a = L.tensor(A)
        with pytest.raises(RuntimeError, match="can't be cast"):
            L.add(a, a, out=L.zeros(2, 3, dtype=L.int64))  # float result, integer out
        w = L.tensor(A, requires_grad=True)
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            L.exp(w, out=L.empty(2, 3))
        with L.no_grad():
            assert L.exp(w, out=L.empty(2, 3)).shape == (2, 3)
        assert L.add(a.long(), a.long(), out=L.zeros(2, 3)).dtype == L.float32  # integer into float: fine


def test_nelement_and_resize_():
    for L in (ember, torch):
        x = L.arange(6.0)
        assert x.nelement() == 6 == x.numel()
        x.resize_(2, 2)
        assert x.tolist() == [[0.0, 1.0], [2.0, 3.0]]
        y = L.zeros(3)
        y.resize_as_(x)
        assert tuple(y.shape) == (2, 2)
        with pytest.raises(RuntimeError, match="require grad"):
            L.ones(2, requires_grad=True).resize_(3)
