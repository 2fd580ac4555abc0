"""Transformer, TransformerEncoder, TransformerDecoder: torch weights load by state_dict; outputs and gradients
(with causal, padding and memory masks) equal torch's."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.testing import torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(9)
E, H, FF = 8, 2, 16


def _load(e_mod, t_mod):
    sd = t_mod.state_dict()
    assert list(e_mod.state_dict()) == list(sd)
    assert e_mod.load_state_dict({k: v.detach().numpy() for k, v in sd.items()}) == ([], [])


def _compare(e_mod, t_mod, e_args, t_args, e_kw, t_kw, grads_of):
    """Forward equal; then gradients of a random projection w.r.t. inputs ``grads_of`` and every parameter."""
    e_out, t_out = e_mod(*e_args, **e_kw), t_mod(*t_args, **t_kw)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-9, atol=1e-10)
    w = rng.standard_normal(tuple(t_out.shape))
    (t_out * torch.tensor(w)).sum().backward()
    (e_out * ember.tensor(w)).sum().backward()
    for i in grads_of:
        np.testing.assert_allclose(e_args[i].grad.numpy(), t_args[i].grad.numpy(), rtol=1e-8, atol=1e-10)
    tp = dict(t_mod.named_parameters())
    for k, p in e_mod.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[k].grad.numpy(), rtol=1e-8, atol=1e-10, err_msg=k)


def _tensors(*arrays):
    return [ember.tensor(a, requires_grad=True) for a in arrays], [torch.tensor(a, requires_grad=True) for a in arrays]


def _pad(batch, length, lib):
    m = np.zeros((batch, length), dtype=bool)
    m[0, -2:] = True  # the first sequence is 2 shorter
    return ember.tensor(m) if lib == "ember" else torch.tensor(m)


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_parity(batch_first, norm_first):
    cfg = {"d_model": E, "nhead": H, "num_encoder_layers": 2, "num_decoder_layers": 2, "dim_feedforward": FF,
           "dropout": 0.0, "batch_first": batch_first, "norm_first": norm_first}  # fmt: skip
    t = torch.nn.Transformer(**cfg).double()
    e = nn.Transformer(**cfg, dtype=ember.float64)
    _load(e, t)
    n, s, l_ = 2, 5, 4
    src = rng.standard_normal((n, s, E) if batch_first else (s, n, E))
    tgt = rng.standard_normal((n, l_, E) if batch_first else (l_, n, E))
    (es, et), (ts, tt) = zip(*[_tensors(src), _tensors(tgt)], strict=True)
    es, et, ts, tt = es[0], et[0], ts[0], tt[0]
    e_kw = {"tgt_mask": nn.Transformer.generate_square_subsequent_mask(l_, dtype=ember.float64),
            "src_key_padding_mask": _pad(n, s, "ember"), "memory_key_padding_mask": _pad(n, s, "ember"),
            "tgt_is_causal": True}  # fmt: skip
    t_kw = {"tgt_mask": torch.nn.Transformer.generate_square_subsequent_mask(l_, dtype=torch.float64),
            "src_key_padding_mask": _pad(n, s, "torch"), "memory_key_padding_mask": _pad(n, s, "torch"),
            "tgt_is_causal": True}  # fmt: skip
    _compare(e, t, [es, et], [ts, tt], e_kw, t_kw, grads_of=[0, 1])


@needs_torch
def test_encoder_stack_with_norm_causal_and_masks():
    layer_t = torch.nn.TransformerEncoderLayer(E, H, FF, 0.0).double()
    t = torch.nn.TransformerEncoder(layer_t, 3, norm=torch.nn.LayerNorm(E).double(), enable_nested_tensor=False)
    layer_e = nn.TransformerEncoderLayer(E, H, FF, 0.0, dtype=ember.float64)
    e = nn.TransformerEncoder(layer_e, 3, norm=nn.LayerNorm(E, dtype=ember.float64), enable_nested_tensor=False)
    _load(e, t)
    x = rng.standard_normal((6, 2, E))
    (ex,), (tx,) = _tensors(x)
    e_mask = nn.Transformer.generate_square_subsequent_mask(6, dtype=ember.float64)
    t_mask = torch.nn.Transformer.generate_square_subsequent_mask(6, dtype=torch.float64)
    e_kw = {"mask": e_mask, "is_causal": True, "src_key_padding_mask": _pad(2, 6, "ember")}
    t_kw = {"mask": t_mask, "is_causal": True, "src_key_padding_mask": _pad(2, 6, "torch")}
    _compare(e, t, [ex], [tx], e_kw, t_kw, grads_of=[0])


@needs_torch
def test_decoder_stack_without_norm_and_bool_memory_mask():
    t = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(E, H, FF, 0.0, batch_first=True).double(), 2)
    e = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, FF, 0.0, batch_first=True, dtype=ember.float64), 2)
    _load(e, t)
    (et, em), (tt, tm) = zip(*[_tensors(rng.standard_normal((2, 4, E))), _tensors(rng.standard_normal((2, 5, E)))],
                             strict=True)  # fmt: skip
    mm = np.zeros((4, 5), dtype=bool)
    mm[:, 3] = True
    _compare(e, t, [et[0], em[0]], [tt[0], tm[0]], {"memory_mask": ember.tensor(mm)}, {"memory_mask": torch.tensor(mm)},
             grads_of=[0, 1])  # fmt: skip


def test_stack_copies_are_independent_and_shapes_checked():
    layer = nn.TransformerEncoderLayer(E, H, FF, 0.0)
    enc = nn.TransformerEncoder(layer, 2)
    w0, w1 = enc.layers[0].linear1.weight, enc.layers[1].linear1.weight
    assert w0 is not w1 and np.array_equal(w0.detach().numpy(), w1.detach().numpy())
    assert len(enc.state_dict()) == 2 * len(layer.state_dict())
    model = nn.Transformer(E, H, 1, 1, FF, 0.0)
    assert model(ember.randn(5, 2, E), ember.randn(3, 2, E)).shape == (3, 2, E)
    assert model(ember.randn(5, E), ember.randn(3, E)).shape == (3, E)  # unbatched
    with pytest.raises(RuntimeError, match="batch number"):
        model(ember.randn(5, 2, E), ember.randn(3, 4, E))
    with pytest.raises(RuntimeError, match="d_model"):
        model(ember.randn(5, 2, 4), ember.randn(3, 2, 4))
    with pytest.raises(ValueError, match="num_layers"):
        nn.TransformerEncoder(layer, 0)
    m = nn.Transformer.generate_square_subsequent_mask(3)
    assert m.numpy().tolist() == [[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]]
