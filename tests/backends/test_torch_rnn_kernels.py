"""The torch backend's recurrent cells (``backends/torch/rnn_kernels.py``): forward equal to aten's cells bit for
bit, backward equal to torch autograd's gradients through them (every input, each subset of needed gradients,
an LSTM step with only one output's gradient), and a weight used by several steps ending with a contiguous
``.grad`` equal to PyTorch's."""

import numpy as np
import pytest

import ember
from ember import backends
from ember.nn._rnn_ops import gru_cell, lstm_cell, rnn_cell

torch = pytest.importorskip("torch")
from ember.backends.torch.backend import TorchBackend  # noqa: E402

N, IN, H = 5, 4, 6
KINDS = ["lstm", "gru", "rnn_tanh", "rnn_relu"]
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _inputs(kind, bias, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=dtype)
    gh = GATES[kind] * H
    states = [r(N, H), r(N, H)] if kind == "lstm" else [r(N, H)]
    return [r(N, IN), *states, r(gh, IN), r(gh, H)] + ([r(gh), r(gh)] if bias else [])


def _torch_cell(kind, x, *rest):
    if kind == "lstm":
        h, c, *w = rest
        return torch.lstm_cell(x, (h, c), *w)
    if kind == "gru":
        return (torch.gru_cell(x, *rest),)
    return (getattr(torch, kind + "_cell")(x, *rest),)


def _kernel(be, kind, args, bias):
    """The backend's forward: ``(outputs, saved)``, weights/biases completed with None."""
    a = list(args) + ([] if bias else [None, None])
    if kind == "lstm":
        h1, c1, saved = be.lstm_cell(*a)
        return (h1, c1), saved
    if kind == "gru":
        h1, saved = be.gru_cell(*a)
        return (h1,), saved
    h1, saved = be.rnn_cell(*a, kind.split("_")[1])
    return (h1,), h1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("kind", KINDS)
def test_cell_forward_is_atens_bit_for_bit(kind, bias, dtype):
    args = _inputs(kind, bias, dtype)
    got, _ = _kernel(TorchBackend(), kind, args, bias)
    want = _torch_cell(kind, *args)
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("kind", KINDS)
def test_cell_backward_equals_torch_autograd(kind, bias):
    """Every needed gradient (all, and each one alone) equals torch autograd's through aten's cell (float64)."""
    be = TorchBackend()
    args = _inputs(kind, bias, torch.float64, seed=1)
    leaves = [a.clone().requires_grad_() for a in args]
    outs = _torch_cell(kind, *leaves)
    gouts = [torch.randn_like(o) for o in outs]
    want = torch.autograd.grad(outs, leaves, gouts)
    _, saved = _kernel(be, kind, args, bias)
    pad = () if bias else (False, False)  # no bias: its gradient is never asked for
    for need in [(True,) * len(args)] + [tuple(j == i for j in range(len(args))) for i in range(len(args))]:
        need += pad
        if kind == "lstm":
            got = be.lstm_cell_backward(*gouts, saved, *args[:5], need)
        elif kind == "gru":
            got = be.gru_cell_backward(gouts[0], saved, *args[:4], need)
        else:
            got = be.rnn_cell_backward(gouts[0], saved, *args[:4], kind.split("_")[1], need)
        assert len(got) == len(need)
        for i, (g, flag) in enumerate(zip(got, need, strict=True)):
            if flag:
                torch.testing.assert_close(g, want[i], rtol=1e-12, atol=1e-12)
            else:
                assert g is None


@pytest.mark.parametrize("which", ["h", "c"])
def test_lstm_backward_from_one_output(which):
    be = TorchBackend()
    args = _inputs("lstm", True, torch.float64, seed=2)
    leaves = [a.clone().requires_grad_() for a in args]
    h1, c1 = torch.lstm_cell(leaves[0], (leaves[1], leaves[2]), *leaves[3:])
    out = h1 if which == "h" else c1
    gout = torch.randn_like(out)
    want = torch.autograd.grad(out, leaves, gout)
    _, saved = _kernel(be, "lstm", args, True)
    gh, gc = (gout, None) if which == "h" else (None, gout)
    got = be.lstm_cell_backward(gh, gc, saved, *args[:5], (True,) * 7)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_weights_shared_by_steps_get_contiguous_grads_equal_to_torch(kind):
    """Three steps reusing one cell's weights: each weight's ``.grad`` (accumulated from transposed per-step
    gradients) is contiguous and equals PyTorch's."""
    args = _inputs(kind, True, torch.float64, seed=3)
    nstate = 2 if kind == "lstm" else 1
    x, states, params = args[0], args[1 : 1 + nstate], args[1 + nstate :]
    ref = [p.clone().requires_grad_() for p in params]
    st = list(states)
    for _ in range(3):
        st = list(_torch_cell(kind, x, *st, *ref))
    sum(s.sum() for s in st).backward()
    with backends.use("torch"):
        ps = [ember.tensor(p.numpy(), requires_grad=True) for p in params]
        xe, se = ember.tensor(x.numpy()), [ember.tensor(s.numpy()) for s in states]
        for _ in range(3):
            if kind == "lstm":
                se = list(lstm_cell(xe, *se, *ps))
            elif kind == "gru":
                se = [gru_cell(xe, *se, *ps)]
            else:
                se = [rnn_cell(xe, *se, *ps, kind.split("_")[1])]
        sum(s.sum() for s in se).backward()
    for p, r in zip(ps, ref, strict=True):
        assert p.grad._data.is_contiguous()
        np.testing.assert_allclose(p.grad.numpy(), r.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_layer_gradient_hooks_equal_the_reference():
    """The GRU and Elman layers' per-step gradient rules (aten's fused kernels) against the reference's
    arithmetic, run on the same torch tensors."""
    from ember.backends._kernels_rnn import RNNKernels

    be = TorchBackend()
    g = torch.Generator().manual_seed(4)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)
    act = torch.cat([torch.rand(N, 2 * H, generator=g, dtype=torch.float64), torch.tanh(r(N, H))], 1)
    gh, hn, h = r(N, H), r(N, H), r(N, H)
    bufs = [torch.empty(N, 3 * H, dtype=torch.float64) for _ in range(4)]
    direct = be._gru_dz(bufs[0], bufs[1], gh, act, hn, h)
    want = RNNKernels._gru_dz(be, bufs[2], bufs[3], gh, act, hn, h)
    for a, b in [(direct, want), (bufs[0], bufs[2]), (bufs[1], bufs[3])]:
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)
    h1 = torch.tanh(r(N, H))
    torch.testing.assert_close(be._rnn_dz(gh, h1, "tanh"), RNNKernels._rnn_dz(be, gh, h1, "tanh"))
    h1 = torch.relu(r(N, H))
    torch.testing.assert_close(be._rnn_dz(gh, h1, "relu"), RNNKernels._rnn_dz(be, gh, h1, "relu"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("given", ["both", "h", "c"])
def test_lstm_gate_gradients_equal_the_per_gate_kernels_bit_for_bit(dtype, given):
    """``_lstm_dz`` runs one ``sigmoid_backward`` over all four gate blocks: the same bits as one per gate."""
    be = TorchBackend()
    x, h, c, *w = _inputs("lstm", True, dtype, seed=7)
    _, (act, tc) = _kernel(be, "lstm", [x, h, c, *w], True)
    g = torch.Generator().manual_seed(8)
    gh = torch.randn(N, H, generator=g, dtype=dtype) if given != "c" else None
    gc = torch.randn(N, H, generator=g, dtype=dtype) if given != "h" else None
    i, f, gg, o = act.chunk(4, 1)
    aten = torch.ops.aten
    if gh is not None:
        dc = aten.tanh_backward(gh * o, tc) + (gc if gc is not None else 0)
        do = aten.sigmoid_backward(gh * tc, o)
    else:
        dc, do = gc.clone(), torch.zeros_like(o)
    want = torch.cat(
        [aten.sigmoid_backward(dc * gg, i), aten.sigmoid_backward(dc * c, f), aten.tanh_backward(dc * i, gg), do], 1
    )
    dz = torch.empty_like(act)
    got_dc = be._lstm_dz(dz, gh, gc, act, tc, c)
    assert torch.equal(dz, want) and torch.equal(got_dc, dc)
