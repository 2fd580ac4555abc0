"""Views NumPy makes out of sight of the recorder (``as_strided``, ``sliding_window_view``) replay as views of
the replay's memory.

Found running nanoGPT: ``q, k, v = c_attn(x).split(C, 2)`` then ``k.view(B, T, nh, hs)`` views a non-contiguous
slice through ``as_strided``, which made the view with ``np.asarray`` of an object exposing the memory. The
recorder took that for a creation from a constant and replayed the *captured* memory: a compiled module in
grad mode returned stale attention (wrong losses and gradients from the second call on), and a compiled
function whose checked call repeated the captured input replayed stale values on new data.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F


def _bits(t):
    return np.ascontiguousarray(t.detach().numpy()).tobytes()


class _Attention(nn.Module):
    """nanoGPT's attention: one projection split in three, each viewed into heads."""

    def __init__(self, c: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.c_attn, self.c_proj, self.heads = nn.Linear(c, 3 * c), nn.Linear(c, c), heads

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


def test_compiled_module_with_split_views_trains_exactly_as_eager():
    ember.manual_seed(0)
    m = _Attention()
    ref = copy.deepcopy(m)
    cm = ember.compile(m)
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = ember.tensor(rng.standard_normal((3, 5, 16)).astype(np.float32))
        a, b = cm(x), ref(x)
        assert _bits(a) == _bits(b)
        (a * a).sum().backward()
        (b * b).sum().backward()
        for p, q in zip(m.parameters(), ref.parameters(), strict=True):
            assert _bits(p.grad) == _bits(q.grad)
        m.zero_grad()
        ref.zero_grad()
    assert cm._graph.stats["replays"] >= 2


def test_a_replay_after_a_check_on_the_captured_input_sees_new_data():
    def f(x):
        y = x * 1
        return y[:, 2:6].view(4, 2, 2) * 1  # a non-contiguous slice viewed: as_strided

    g = ember.compile(f)
    rng = np.random.default_rng(1)
    x1, x2 = (ember.tensor(rng.standard_normal((4, 8))) for _ in range(2))
    with ember.no_grad():
        g(x1)
        g(x1)  # the checked call, on the captured input itself
        for x in (x2, x1 + 1):
            assert _bits(g(x)) == _bits(f(x))
    assert g.stats["replays"] == 2


def test_sliding_window_and_as_strided_in_a_compiled_step_replay_on_fresh_memory():
    def f(x):
        w = x.unfold(1, 3, 1)  # windows: a strided view
        s = ember.as_strided(x * 2, (3, 2), (2, 1))
        return w.sum(-1) * 1, s * 1

    g = ember.compile(f)
    rng = np.random.default_rng(2)
    with ember.no_grad():
        for _ in range(4):
            x = ember.tensor(rng.standard_normal((3, 6)))
            for a, b in zip(g(x), f(x), strict=True):
                assert _bits(a) == _bits(b)
    assert g.stats["replays"] >= 2


def _corrupt(program, what):
    run = program.run

    def bad(*a):
        res = run(*a)
        if what == "fwd":
            outs, saved = res
            return (outs[0] + 1, *outs[1:]), saved
        return tuple(None if r is None else r * 2 for r in res)

    program.run = bad


@pytest.mark.parametrize("what", ["fwd", "bwd"])
def test_a_grad_mode_forward_is_checked_beside_eager_on_its_first_replay(what):
    """Defence in depth: had a capture bug like the one above slipped through, the first replay of a compiled
    forward under grad mode (forward outputs, state, and the backward's gradients) is compared with eager."""
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
    ref = copy.deepcopy(m)
    cm = ember.compile(m)
    x = ember.randn(3, 4)
    cm(x).sum().backward()
    _corrupt(getattr(cm._graph.cache[0], what), what)
    with pytest.warns(UserWarning, match="forward" if what == "fwd" else "backward's gradients"):
        y = cm(x)
    for _ in range(2):
        m.zero_grad()
        ref.zero_grad()
        y, r = cm(x), ref(x)
        assert _bits(y) == _bits(r)
        y.sum().backward()
        r.sum().backward()
        assert all(_bits(p.grad) == _bits(q.grad) for p, q in zip(m.parameters(), ref.parameters(), strict=True))
    assert cm._graph.eager and cm._graph.stats["replays"] == 0
