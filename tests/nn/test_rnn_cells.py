"""RNNCell, LSTMCell, GRUCell: PyTorch's weights load by state_dict; outputs and gradients equal torch's."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.testing import torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(5)


def _pair(name, *args, **kwargs):
    t = getattr(torch.nn, name)(*args, **kwargs).double()
    e = getattr(nn, name)(*args, **kwargs, dtype=ember.float64)
    assert e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()}) == ([], [])
    assert list(e.state_dict()) == list(t.state_dict())
    return e, t


def _flat(out):
    return list(out) if isinstance(out, tuple) else [out]


CELLS = [
    ("RNNCell", (3, 4), {}),
    ("RNNCell", (3, 4), {"nonlinearity": "relu", "bias": False}),
    ("LSTMCell", (3, 4), {}),
    ("GRUCell", (3, 4), {}),
    ("GRUCell", (3, 4), {"bias": False}),
]


@needs_torch
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_state", [True, False])
@pytest.mark.parametrize(("name", "args", "kwargs"), CELLS)
def test_cell_parity(name, args, kwargs, with_state, batched):
    e, t = _pair(name, *args, **kwargs)
    lead = (2,) if batched else ()
    x = rng.standard_normal((*lead, args[0]))
    states = [rng.standard_normal((*lead, args[1])) for _ in range(2 if name == "LSTMCell" else 1)]
    e_in = [ember.tensor(a, requires_grad=True) for a in [x, *states]]
    t_in = [torch.tensor(a, requires_grad=True) for a in [x, *states]]

    def call(cell, ins):
        if not with_state:
            return cell(ins[0])
        return cell(ins[0], tuple(ins[1:]) if name == "LSTMCell" else ins[1])

    e_out, t_out = _flat(call(e, e_in)), _flat(call(t, t_in))
    ws = [rng.standard_normal(tuple(o.shape)) for o in t_out]
    for eo, to in zip(e_out, t_out, strict=True):
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    sum((o * torch.tensor(w)).sum() for o, w in zip(t_out, ws, strict=True)).backward()
    sum((o * ember.tensor(w)).sum() for o, w in zip(e_out, ws, strict=True)).backward()
    for ei, ti in zip(e_in, t_in, strict=True):
        if ti.grad is not None:
            np.testing.assert_allclose(ei.grad.numpy(), ti.grad.numpy(), rtol=1e-10, atol=1e-12)
    tp = dict(t.named_parameters())
    for k, p in e.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[k].grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=k)


@needs_torch
def test_lstm_cell_unrolled_equals_lstm_layer():
    """An LSTMCell stepped over a sequence reproduces nn.LSTM with the same weights."""
    layer = nn.LSTM(3, 5, dtype=ember.float64)
    cell = nn.LSTMCell(3, 5, dtype=ember.float64)
    sd = layer.state_dict()
    cell.load_state_dict({k.replace("_l0", ""): v for k, v in sd.items()})
    x = ember.tensor(rng.standard_normal((6, 2, 3)))
    out, (_, c_n) = layer(x)
    h = c = ember.zeros(2, 5, dtype=ember.float64)
    for t in range(6):
        h, c = cell(x[t], (h, c))
        np.testing.assert_allclose(h.detach().numpy(), out[t].detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(c.detach().numpy(), c_n[0].detach().numpy(), rtol=1e-12)


def test_cell_errors_and_flatten_parameters():
    with pytest.raises(ValueError, match=r"LSTMCell: input has inconsistent input_size: got 4 expected 3"):
        nn.LSTMCell(3, 2)(ember.zeros(5, 4))
    with pytest.raises(ValueError, match=r"GRUCell: hidden state of shape \(5, 3\)"):
        nn.GRUCell(3, 2)(ember.zeros(5, 3), ember.zeros(5, 3))
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNNCell(3, 2, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="1D or 2D"):
        nn.RNNCell(3, 2)(ember.zeros(1, 5, 3))
    lstm = nn.LSTM(3, 4)
    before = {k: v.numpy().copy() for k, v in lstm.state_dict().items()}
    assert lstm.flatten_parameters() is None
    assert all(np.array_equal(before[k], v.numpy()) for k, v in lstm.state_dict().items())
    assert repr(nn.GRUCell(3, 2, bias=False)) == "GRUCell(3, 2, bias=False)"
    assert nn.LSTMCellConfig(3, 4).init().weight_ih.shape == (16, 3)
