"""``nn.attention.flex_attention``: block masks, forward and log-sum-exp against PyTorch's (its CPU eager path), and
the gradient against finite differences (PyTorch has no CPU backward for it)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::FutureWarning")]


def _fa(lib):
    return importlib.import_module(lib.__name__ + ".nn.attention.flex_attention")


def _case(lib, requires_grad=False):
    fa = _fa(lib)
    rng = np.random.default_rng(0)
    q = lib.tensor(rng.standard_normal((2, 4, 5, 8)), requires_grad=requires_grad)
    k = lib.tensor(rng.standard_normal((2, 2, 7, 8)), requires_grad=requires_grad)
    v = lib.tensor(rng.standard_normal((2, 2, 7, 6)), requires_grad=requires_grad)
    pad = lib.tensor([[True] * 7, [True] * 4 + [False] * 3])

    def window(b, h, qi, ki):
        return (qi + 2 >= ki) & pad[b, ki]

    def none_for_row0(b, h, qi, ki):
        return qi > 0

    mask = _fa(lib).and_masks(window, _fa(lib).or_masks(none_for_row0, lambda b, h, qi, ki: h == 1))
    bm = fa.create_block_mask(mask, 2, None, 5, 7, device="cpu", BLOCK_SIZE=2)
    return fa, q, k, v, bm


def test_block_mask_tables_and_forward_match_torch():
    got = []
    for lib in (torch, ember):
        fa, q, k, v, bm = _case(lib)
        tables = [t.tolist() for t in bm.as_tuple()[2:10]]
        dense = fa.create_mask(fa.noop_mask, 1, 2, 3, 4, device="cpu").tolist()
        o, aux = fa.flex_attention(q, k, v, score_mod=lambda s, b, h, qi, ki: s + 0.1 * (qi - ki) * (h + 1),
                                   block_mask=bm, enable_gqa=True, return_aux=fa.AuxRequest(lse=True))  # fmt: skip
        plain, lse = fa.flex_attention(q.float()[:, :2], k.float(), v.float(), scale=0.3, return_lse=True)
        rebuilt = fa.BlockMask.from_kv_blocks(bm.kv_num_blocks, bm.kv_indices, bm.full_kv_num_blocks,
                                              bm.full_kv_indices, BLOCK_SIZE=2, mask_mod=bm.mask_mod)  # fmt: skip
        got.append((tables, tuple(bm.shape), bm.BLOCK_SIZE, dense, [t.tolist() for t in rebuilt.as_tuple()[4:10]],
                    o.numpy(), aux.lse.numpy(), plain.numpy(), lse.numpy(), bm.to_dense().tolist()))  # fmt: skip
    t, e = got
    assert e[:5] == t[:5] and e[9] == t[9]
    for a, b, tol in zip(t[5:9], e[5:9], (1e-12, 1e-12, 1e-6, 1e-6), strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(b, a, rtol=tol, atol=tol)
    assert np.all(e[5][:, 0, 0] == 0) and np.all(np.isneginf(e[6][:, 0, 0]))  # a row with nothing allowed: zeros


def test_gradient_matches_finite_differences():
    fa, q, k, v, bm = _case(ember, requires_grad=True)

    def f(q, k, v):
        return fa.flex_attention(q, k, v, score_mod=lambda s, b, h, qi, ki: s * (1.0 + 0.1 * h), block_mask=bm,
                                 enable_gqa=True)  # fmt: skip

    assert ember.autograd.gradcheck(f, (q, k, v))


def test_bad_inputs():
    fa = _fa(ember)
    q, k = ember.zeros(1, 4, 3, 8), ember.zeros(1, 2, 3, 8)
    with pytest.raises(ValueError, match="enable_gqa"):
        fa.flex_attention(q, k, k)
    with pytest.raises(ValueError, match="4-d"):
        fa.flex_attention(q[0], k, k)
