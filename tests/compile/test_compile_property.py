"""Property: random small programs (a menu of 43 operations: arithmetic, views, indexing, in-place writes,
reductions, a backward pass) captured by ``ember.compile`` and replayed with fresh inputs equal eager, bit for bit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import ember

T = Any


def _inplace_add(a: T, b: T) -> T:
    c = a.clone()
    c.add_(b)
    return c


def _inplace_mul_view(a: T, b: T) -> T:
    c = a * 1.0
    v = c[:, 1:3]
    v.mul_(b[:, :2])  # a write through a view
    return c


def _setitem_row(a: T, b: T) -> T:
    c = a.clone()
    c[1] = b[2]
    return c


def _setitem_index(a: T, b: T) -> T:
    c = a.clone()
    c[ember.tensor([0, 2])] = b[:2] * 2
    return c


def _clamp_(a: T, b: T) -> T:
    c = a + 0.0
    c.clamp_(-0.5, 0.5)
    return c + b


def _copy_into_transpose(a: T, b: T) -> T:
    c = ember.zeros(4, 3, dtype=a.dtype)
    c.copy_(a.t())
    return c.t() * b


OPS: list[tuple[str, Callable[[T, T], T]]] = [
    ("add", lambda a, b: a + b),
    ("sub", lambda a, b: a - b),
    ("mul", lambda a, b: a * b),
    ("div", lambda a, b: a / (b.abs() + 1)),
    ("maximum", lambda a, b: ember.maximum(a, b)),
    ("minimum", lambda a, b: ember.minimum(a, b)),
    ("where", lambda a, b: ember.where(a > b, a, b * 2)),
    ("exp", lambda a, b: (a * 0.5).exp()),
    ("tanh", lambda a, b: a.tanh()),
    ("sigmoid", lambda a, b: a.sigmoid()),
    ("relu", lambda a, b: ember.relu(a)),
    ("abs", lambda a, b: a.abs() + b),
    ("sin", lambda a, b: a.sin()),
    ("square", lambda a, b: a * a),
    ("sqrt", lambda a, b: (a * a + 1).sqrt()),
    ("log", lambda a, b: (a.abs() + 1).log()),
    ("pow", lambda a, b: (a.abs() + 0.5) ** 1.5),
    ("softmax", lambda a, b: a.softmax(1)),
    ("log_softmax", lambda a, b: a.log_softmax(0)),
    ("sum_keep", lambda a, b: a.sum(1, keepdim=True) + b),
    ("mean_keep", lambda a, b: a.mean(0, keepdim=True) * b),
    ("max_keep", lambda a, b: a.max(1, keepdim=True).values + b),
    ("cumsum", lambda a, b: a.cumsum(1)),
    ("matmul", lambda a, b: a @ b.t() @ a),
    ("transpose_back", lambda a, b: a.t().contiguous().t() + b),
    ("reshape_back", lambda a, b: a.reshape(4, 3).flip(0).reshape(3, 4)),
    ("slice_cat", lambda a, b: ember.cat([a[:, 2:], b[:, :2]], 1)),
    ("stack_sum", lambda a, b: ember.stack([a, b]).sum(0)),
    ("flip", lambda a, b: a.flip(1) * b),
    ("index_cols", lambda a, b: a[:, ember.tensor([3, 1, 0, 2])]),
    ("gather", lambda a, b: a.gather(1, ember.tensor([[0, 1, 2, 3], [3, 2, 1, 0], [1, 1, 2, 2]]))),
    ("unsqueeze_expand", lambda a, b: a[:, :1].expand(3, 4) + b),
    ("step_slice", lambda a, b: ember.cat([a[:, ::2], b[:, 1::2]], 1)),
    ("inplace_add", _inplace_add),
    ("inplace_mul_view", _inplace_mul_view),
    ("setitem_row", _setitem_row),
    ("setitem_index", _setitem_index),
    ("clamp_", _clamp_),
    ("copy_transpose", _copy_into_transpose),
    ("dropout", lambda a, b: ember.nn.functional.dropout(a, 0.3) + b),
    # views NumPy makes through as_strided (a non-contiguous slice viewed, nanoGPT's split-then-view)
    ("split_view", lambda a, b: ember.cat([k.view(3, 1, 2).reshape(3, 2) for k in (a * 1).split(2, 1)][::-1], 1)),
    ("as_strided", lambda a, b: ember.as_strided(a * 1, (3, 4), (1, 3)) + b),
    ("unfold", lambda a, b: a.unfold(1, 2, 2).reshape(3, 4) * b),
]

step = st.tuples(st.integers(0, len(OPS) - 1), st.integers(0, 9), st.integers(0, 9))


def _run(program: list[tuple[int, int, int]], a: T, b: T) -> tuple[T, ...]:
    pool = [a, b]
    for op, i, j in program:
        pool.append(OPS[op][1](pool[i % len(pool)], pool[j % len(pool)]))
    loss = sum((t * (k + 1)).sum() for k, t in enumerate(pool[2:])) + (a * b).sum()
    loss.backward()
    return (loss, *(t.detach() for t in pool[-2:]))


def _bits(t: Any) -> bytes:
    return np.ascontiguousarray(t.detach().numpy()).tobytes()


@settings(max_examples=40)
@given(st.lists(step, min_size=1, max_size=6), st.sampled_from(["float32", "float64"]))
def test_random_programs_replay_as_eager(program: list[tuple[int, int, int]], dtype: str) -> None:
    compiled = ember.compile(_run)
    rng = np.random.default_rng(len(program))
    for _ in range(4):  # capture, checked replay, then two plain replays, each on fresh inputs
        x, y = rng.standard_normal((2, 3, 4)).astype(dtype)
        eager_in = [ember.tensor(x, requires_grad=True), ember.tensor(y, requires_grad=True)]
        comp_in = [ember.tensor(x, requires_grad=True), ember.tensor(y, requires_grad=True)]
        state = ember.get_rng_state()
        want = _run(program, *eager_in)
        ember.set_rng_state(state)
        got = compiled(program, *comp_in)
        assert [_bits(t) for t in got] == [_bits(t) for t in want], [OPS[p[0]][0] for p in program]
        assert [_bits(t.grad) for t in comp_in] == [_bits(t.grad) for t in eager_in]
    assert not compiled.eager and compiled.stats["replays"] == 2, compiled.reason
