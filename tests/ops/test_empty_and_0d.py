"""0-d and empty inputs of indexing, reduction and normalisation operators behave as in PyTorch (the same call
under both libraries: equal results, or both refuse)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

CASES = {
    "masked_select_0d": lambda L: L.masked_select(L.tensor(3.0), L.tensor(True)),
    "masked_select_0d_false": lambda L: L.masked_select(L.tensor(3.0), L.tensor(False)),
    "masked_select_empty": lambda L: L.masked_select(L.zeros(0, 3), L.zeros(0, 3, dtype=L.bool)),
    "masked_select_broadcast": lambda L: L.masked_select(L.ones(2, 3), L.tensor([True, False, True])),
    "scatter_0d": lambda L: L.tensor(1.0).scatter(0, L.tensor(0), L.tensor(5.0)),
    "scatter_empty_index": lambda L: L.zeros(3).scatter(0, L.zeros(0, dtype=L.long), L.zeros(0)),
    "scatter_add_0d": lambda L: L.tensor(1.0).scatter_add(0, L.tensor(0), L.tensor(5.0)),
    "scatter_reduce_0d": lambda L: L.tensor(1.0).scatter_reduce(0, L.tensor(0), L.tensor(5.0), "amax"),
    "scatter_value": lambda L: L.zeros(3).scatter(0, L.tensor([2]), 7.0),
    "index_add_0d": lambda L: L.tensor(1.0).index_add(0, L.tensor([0]), L.tensor(5.0)),
    "index_add_empty": lambda L: L.zeros(3, 2).index_add(0, L.zeros(0, dtype=L.long), L.zeros(0, 2)),
    "index_copy_0d": lambda L: L.tensor(1.0).index_copy(0, L.tensor([0]), L.tensor(5.0)),
    "index_copy_empty": lambda L: L.zeros(3, 2).index_copy(0, L.zeros(0, dtype=L.long), L.zeros(0, 2)),
    "unfold_0d": lambda L: L.tensor(2.0).unfold(0, 1, 1),
    "unfold_empty": lambda L: L.zeros(0, 4).unfold(1, 2, 1),
    "unfold_size0": lambda L: L.arange(5.0).unfold(0, 0, 1),
    "batch_norm_empty": lambda L: L.nn.functional.batch_norm(L.zeros(0, 3), L.zeros(3), L.ones(3), training=False),
    "batch_norm_empty_train": lambda L: L.nn.functional.batch_norm(L.zeros(0, 3, 2), None, None, training=True),
    "batch_norm_one_value_train": lambda L: L.nn.functional.batch_norm(L.ones(1, 3), None, None, training=True),
    "aminmax_0d": lambda L: L.aminmax(L.tensor(3.0)),
    "aminmax_empty_other_dim": lambda L: L.aminmax(L.zeros(0, 3), dim=1),
    "aminmax_empty": lambda L: L.aminmax(L.zeros(0)),
    "gather_0d": lambda L: L.tensor(4.0).gather(0, L.tensor(0)),
    "index_select_0d": lambda L: L.tensor(4.0).index_select(0, L.tensor([0])),
    "index_fill_0d": lambda L: L.tensor(4.0).index_fill(0, L.tensor([0]), 1.0),
}


def _run(L, fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(L)
    except (RuntimeError, ValueError, IndexError, TypeError) as e:
        return "refused", type(e).__name__
    r = tuple(r) if isinstance(r, tuple) else (r,)
    return "ok", [(tuple(x.shape), x.detach().numpy().tolist()) for x in r]


@pytest.mark.parametrize("name", list(CASES))
def test_like_torch(name):
    got, want = _run(ember, CASES[name]), _run(torch, CASES[name])
    assert got[0] == want[0], (got, want)
    if got[0] == "ok":
        assert got[1] == want[1]
        np.testing.assert_equal(got, want)
