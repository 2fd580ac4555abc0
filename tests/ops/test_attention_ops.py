"""The fused attention and layer-norm operators (``ScaledDotProductAttention``, ``NativeLayerNorm``): gradcheck in
float64 and forward/backward parity with PyTorch (``check_op``) with every kind of mask, dropout (the same
numbers as the composite it replaced), second order, and MultiheadAttention's need_weights paths."""

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.testing import check_op, torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(28)


def r(*shape):
    return rng.standard_normal(shape)


def TF():
    return __import__("torch").nn.functional


def sdpa(label, args, mask=None, **kw):
    """``scaled_dot_product_attention(q, k, v[, float mask], **kw)``; ``mask``: a fixed (non-float) mask."""

    def e(*a):
        m = None if mask is None else ember.tensor(mask)
        return F.scaled_dot_product_attention(*a, **({"attn_mask": m} if m is not None else {}), **kw)

    def t(*a):
        m = None if mask is None else __import__("torch").tensor(mask)
        return TF().scaled_dot_product_attention(*a, **({"attn_mask": m} if m is not None else {}), **kw)

    return label, e, t, args


BOOL = rng.random((2, 1, 4, 6)) > 0.3
BOOL[0, 0, 2] = False  # a query that attends to nothing: zeros, zero gradients (PyTorch's safe softmax)
SDPA = [
    sdpa("plain_4d", [r(2, 3, 4, 5), r(2, 3, 6, 5), r(2, 3, 6, 5)]),
    sdpa("value_dim_differs", [r(2, 3, 4, 5), r(2, 3, 6, 5), r(2, 3, 6, 2)]),
    sdpa("3d", [r(3, 4, 5), r(3, 6, 5), r(3, 6, 3)]),
    sdpa("batch_broadcast", [r(2, 3, 4, 5), r(1, 3, 6, 5), r(1, 3, 6, 5)]),
    sdpa("causal", [r(2, 2, 5, 3), r(2, 2, 5, 3), r(2, 2, 5, 3)], is_causal=True),
    sdpa("causal_rect", [r(1, 2, 3, 4), r(1, 2, 5, 4), r(1, 2, 5, 4)], is_causal=True),
    sdpa("scale", [r(2, 2, 4, 3), r(2, 2, 4, 3), r(2, 2, 4, 3)], scale=0.3),
    sdpa("float_mask_2d", [r(2, 3, 4, 5), r(2, 3, 6, 5), r(2, 3, 6, 5), r(4, 6)]),
    sdpa("float_mask_4d", [r(2, 3, 4, 5), r(2, 3, 6, 5), r(2, 3, 6, 5), r(2, 3, 4, 6)]),
    sdpa("float_mask_broadcast", [r(2, 3, 4, 5), r(2, 3, 6, 5), r(2, 3, 6, 5), r(2, 1, 1, 6)]),
    sdpa("bool_mask", [r(2, 3, 4, 5), r(2, 3, 6, 5), r(2, 3, 6, 5)], mask=BOOL),
    sdpa("bool_mask_2d", [r(3, 4, 5), r(3, 6, 5), r(3, 6, 2)], mask=BOOL[1, 0]),
    sdpa("gqa", [r(1, 4, 3, 2), r(1, 2, 5, 2), r(1, 2, 5, 2)], enable_gqa=True),
]


@pytest.mark.parametrize("name,fn,tfn,args", SDPA, ids=[c[0] for c in SDPA])
def test_sdpa(name, fn, tfn, args):
    check_op(fn, *args, torch_fn=tfn, name=name)


def test_sdpa_runs_as_one_node():
    q, k, v = (ember.tensor(r(2, 2, 3, 4), requires_grad=True) for _ in range(3))
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=ember.tensor(BOOL[0, :, :3, :3]))
    assert y.grad_fn.name == "ScaledDotProductAttentionBackward0"


def test_sdpa_fully_masked_row_is_zero():
    q, k, v = (ember.tensor(r(1, 3, 4), requires_grad=True) for _ in range(3))
    m = np.ones((3, 3), dtype=bool)
    m[1] = False
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=ember.tensor(m))
    y.sum().backward()
    assert np.all(y.detach().numpy()[0, 1] == 0) and np.all(np.isfinite(q.grad.numpy()))
    assert np.all(q.grad.numpy()[0, 1] == 0)


def _composite_with_dropout(q, k, v, p, expected_keep, mask=None):
    """The composite operator the fused one replaced, with the documented dropout mask (``expected_keep``)."""
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + mask
    a = F.softmax(s, -1)
    keep = expected_keep(a, a.shape, p)
    return (a * keep * (1.0 / (1.0 - p))) @ v


@pytest.mark.parametrize("masked", [False, True])
def test_sdpa_dropout_draws_the_same_numbers(masked, expected_keep):
    arrays = [r(2, 3, 4, 5), r(2, 3, 6, 5), r(2, 3, 6, 5)]
    mask = r(4, 6) if masked else None
    outs, grads = [], []
    for fused in (True, False):
        ts = [ember.tensor(a, requires_grad=True) for a in arrays]
        m = None if mask is None else ember.tensor(mask, requires_grad=True)
        ember.manual_seed(5)
        if fused:
            y = F.scaled_dot_product_attention(*ts, attn_mask=m, dropout_p=0.3)
        else:
            y = _composite_with_dropout(*ts, 0.3, expected_keep, m)
        after = ember.rand(3).numpy()  # the generator advanced by as much
        w = ember.tensor(np.linspace(-1, 1, y.numel()).reshape(y.shape))
        (y * w).sum().backward()
        outs.append((y.detach().numpy(), after))
        grads.append([t.grad.numpy() for t in ts] + ([m.grad.numpy()] if m is not None else []))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    for a, b in zip(grads[0], grads[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_sdpa_dropout_gradcheck():
    def fn(q, k, v):
        ember.manual_seed(3)  # the same dropout mask at every evaluation
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.4, is_causal=True)

    check_op(fn, r(2, 2, 4, 3), r(2, 2, 4, 3), r(2, 2, 4, 3), name="sdpa_dropout")


def test_sdpa_dropout_one_drops_everything():
    q, k, v = (ember.tensor(r(2, 3, 4), requires_grad=True) for _ in range(3))
    y = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    y.sum().backward()
    assert not y.detach().numpy().any() and not v.grad.numpy().any()


@pytest.mark.parametrize("kind", ["plain", "float_mask", "causal_dropout"])
def test_sdpa_second_order(kind):
    if kind == "plain":
        check_op(F.scaled_dot_product_attention, r(1, 3, 2), r(1, 4, 2), r(1, 4, 2), second_order=True, name=kind)
    elif kind == "float_mask":
        fn = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        check_op(fn, r(1, 3, 2), r(1, 4, 2), r(1, 4, 2), r(3, 4), second_order=True, name=kind)
    else:

        def fn(q, k, v):
            ember.manual_seed(1)
            return F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=True)

        check_op(fn, r(1, 3, 2), r(1, 3, 2), r(1, 3, 2), second_order=True, name=kind)


LN = [
    ("affine", lambda x, w, b: F.layer_norm(x, (5,), w, b), lambda x, w, b: TF().layer_norm(x, (5,), w, b),
     [r(3, 4, 5) * 2 + 1, r(5), r(5)]),
    ("two_dims", lambda x, w, b: F.layer_norm(x, (4, 5), w, b), lambda x, w, b: TF().layer_norm(x, (4, 5), w, b),
     [r(3, 4, 5), r(4, 5), r(4, 5)]),
    ("weight_only", lambda x, w: F.layer_norm(x, (6,), w), lambda x, w: TF().layer_norm(x, (6,), w), [r(2, 6), r(6)]),
    ("plain", lambda x: F.layer_norm(x, 6, eps=1e-3), lambda x: TF().layer_norm(x, (6,), eps=1e-3), [r(2, 3, 6)]),
]  # fmt: skip


@pytest.mark.parametrize("name,fn,tfn,args", LN, ids=[c[0] for c in LN])
def test_layer_norm(name, fn, tfn, args):
    check_op(fn, *args, torch_fn=tfn, name=name)


def test_layer_norm_second_order_and_one_node():
    fn = lambda x, w, b: F.layer_norm(x, (4,), w, b)
    check_op(fn, r(3, 4), r(4), r(4), second_order=True, name="layer_norm_affine")
    x = ember.tensor(r(2, 4), dtype=ember.float32, requires_grad=True)
    w, b = ember.ones(4, requires_grad=True), ember.zeros(4, requires_grad=True)
    assert F.layer_norm(x, (4,), w, b).grad_fn.name == "NativeLayerNormBackward0"


def _mha_pair(E=6, H=2):
    t = torch.nn.MultiheadAttention(E, H, dropout=0.0).double()
    e = ember.nn.MultiheadAttention(E, H, dropout=0.0, dtype=ember.float64)
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    return e, t


def _mask(kind, L, S, N, H):
    if kind is None:
        return None
    shape = (L, S) if kind.endswith("2d") else (N * H, L, S)
    if kind.startswith("bool"):
        m = rng.random(shape) < 0.3
        m[..., 0] = False  # every query keeps one key (PyTorch's need_weights path gives NaN otherwise)
        return m
    return r(*shape)


@needs_torch
@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("mask_kind", [None, "bool_2d", "float_2d", "bool_3d", "float_3d"])
@pytest.mark.parametrize("kpm_kind", [None, "bool", "float"])
def test_mha_need_weights_paths(need_weights, average, mask_kind, kpm_kind):
    L, S, N, E, H = 4, 5, 2, 6, 2
    e, t = _mha_pair(E, H)
    q, kv = r(L, N, E), r(S, N, E)
    m = _mask(mask_kind, L, S, N, H)
    kpm = None
    if kpm_kind == "bool":
        kpm = np.zeros((N, S), dtype=bool)
        kpm[0, -2:] = True
    elif kpm_kind == "float":
        kpm = r(N, S)
    eq, ekv = ember.tensor(q, requires_grad=True), ember.tensor(kv, requires_grad=True)
    tq, tkv = torch.tensor(q, requires_grad=True), torch.tensor(kv, requires_grad=True)
    kw = {"need_weights": need_weights, "average_attn_weights": average}
    eo, ew = e(eq, ekv, ekv, key_padding_mask=None if kpm is None else ember.tensor(kpm),
               attn_mask=None if m is None else ember.tensor(m), **kw)  # fmt: skip
    to, tw = t(tq, tkv, tkv, key_padding_mask=None if kpm is None else torch.tensor(kpm),
               attn_mask=None if m is None else torch.tensor(m), **kw)  # fmt: skip
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-9, atol=1e-10)
    assert (ew is None) == (tw is None)
    g = r(L, N, E)
    loss_e, loss_t = (eo * ember.tensor(g)).sum(), (to * torch.tensor(g)).sum()
    if ew is not None:
        np.testing.assert_allclose(ew.detach().numpy(), tw.detach().numpy(), rtol=1e-9, atol=1e-10)
        gw = r(*tw.shape)
        loss_e, loss_t = loss_e + (ew * ember.tensor(gw)).sum(), loss_t + (tw * torch.tensor(gw)).sum()
    loss_e.backward()
    loss_t.backward()
    for a, b in ((eq, tq), (ekv, tkv)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-8, atol=1e-10)
    tp = dict(t.named_parameters())
    for k, p in e.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[k].grad.numpy(), rtol=1e-8, atol=1e-10, err_msg=k)


@needs_torch
def test_mha_causal():
    e, t = _mha_pair()
    x = r(5, 2, 6)
    eo = e(ember.tensor(x), ember.tensor(x), ember.tensor(x), need_weights=False, is_causal=True,
           attn_mask=ember.nn.Transformer.generate_square_subsequent_mask(5, dtype=ember.float64))[0]  # fmt: skip
    to = t(torch.tensor(x), torch.tensor(x), torch.tensor(x), need_weights=False, is_causal=True,
           attn_mask=torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64))[0]  # fmt: skip
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-9, atol=1e-10)


def test_mha_dropout_paths_draw_the_same_numbers():
    # need_weights=False runs the fused operator, need_weights=True the composite: one dropout mask, one output
    mha = ember.nn.MultiheadAttention(6, 2, dropout=0.4, dtype=ember.float64)
    x = ember.tensor(r(4, 3, 6))
    kpm = ember.tensor(np.array([[False] * 4, [False, False, True, True], [False] * 4]))
    outs = []
    for need in (False, True):
        ember.manual_seed(11)
        outs.append(mha(x, x, x, key_padding_mask=kpm, need_weights=need)[0].detach().numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights", [False, True])
def test_mha_self_attention_packed_projection(batch_first, need_weights):
    # query is key is value: one projection GEMM, the heads as views of it
    t = torch.nn.MultiheadAttention(6, 3, batch_first=batch_first).double()
    e = ember.nn.MultiheadAttention(6, 3, batch_first=batch_first, dtype=ember.float64)
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = r(2, 5, 6) if batch_first else r(5, 2, 6)
    kpm = np.array([[False] * 5, [False, False, False, True, True]])
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eo = e(ex, ex, ex, key_padding_mask=ember.tensor(kpm), need_weights=need_weights)[0]
    to = t(tx, tx, tx, key_padding_mask=torch.tensor(kpm), need_weights=need_weights)[0]
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-9, atol=1e-10)
    g = r(*to.shape)
    (eo * ember.tensor(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(e.in_proj_weight.grad.numpy(), t.in_proj_weight.grad.numpy(), rtol=1e-8, atol=1e-10)
