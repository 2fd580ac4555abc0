"""The fused recurrent steps (``nn._rnn_ops``): float64 gradchecks (first and second order) of every input,
forward and backward parity with PyTorch's cells (float32 and float64, with and without biases), state reused
across steps with gradients through the whole sequence, one graph node per step, and saturated gates."""

import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn._rnn_ops import GRUCellStep, LSTMCellStep, RNNCellStep, gru_cell, lstm_cell, rnn_cell
from ember.testing import check_op, torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(11)
N, IN, H = 3, 4, 5


def _arrays(gates, bias):
    shapes = [(N, IN), (N, H), (gates * H, IN), (gates * H, H)] + ([(gates * H,)] * 2 if bias else [])
    return [rng.standard_normal(s) for s in shapes]


def _lstm(lib, bias):
    def fn(x, h, c, w_ih, w_hh, *b):
        if lib is ember:
            return lstm_cell(x, h, c, w_ih, w_hh, *(b or (None, None)))
        return torch.lstm_cell(x, (h, c), w_ih, w_hh, *b)

    return fn


def _gru(lib, bias):
    def fn(x, h, w_ih, w_hh, *b):
        if lib is ember:
            return gru_cell(x, h, w_ih, w_hh, *(b or (None, None)))
        return torch.gru_cell(x, h, w_ih, w_hh, *b)

    return fn


def _rnn(lib, bias, nonlinearity):
    def fn(x, h, w_ih, w_hh, *b):
        if lib is ember:
            return rnn_cell(x, h, w_ih, w_hh, *(b or (None, None)), nonlinearity)
        return getattr(torch, f"rnn_{nonlinearity}_cell")(x, h, w_ih, w_hh, *b)

    return fn


def _case(kind, bias):
    """``(ember fn, torch fn, arrays)`` for one cell kind."""
    if kind == "lstm":
        a = _arrays(4, bias)
        return _lstm(ember, bias), _lstm(torch, bias), [a[0], a[1], rng.standard_normal((N, H)), *a[2:]]
    if kind == "gru":
        return _gru(ember, bias), _gru(torch, bias), _arrays(3, bias)
    nl = kind.split("_")[1]
    return _rnn(ember, bias, nl), _rnn(torch, bias, nl), _arrays(1, bias)


KINDS = ["lstm", "gru", "rnn_tanh", "rnn_relu"]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("kind", KINDS)
def test_fused_step_gradcheck_and_parity(kind, bias):
    """Every input (input, state(s), weights, biases): float64 gradcheck of first and second order, and values
    and gradients equal to torch's cell functions in float32 and float64."""
    efn, tfn, arrays = _case(kind, bias)
    check_op(efn, *arrays, torch_fn=tfn if torch is not None else None, second_order=True, name=f"{kind} cell")


@pytest.mark.parametrize("kind", KINDS)
def test_one_node_per_step(kind):
    efn, _, arrays = _case(kind, True)
    xs = [ember.tensor(a, requires_grad=True) for a in arrays]
    out = efn(*xs)
    outs = out if isinstance(out, tuple) else (out,)
    cls = {"lstm": LSTMCellStep, "gru": GRUCellStep}.get(kind, RNNCellStep)
    assert all(type(o.grad_fn) is cls for o in outs)
    assert len({id(o.grad_fn) for o in outs}) == 1
    assert list(outs[0].grad_fn.inputs[: len(xs)]) == xs


@pytest.mark.parametrize("which", [0, 1])
def test_lstm_step_with_one_output_unused(which):
    """Only h' (or only c') reaches the loss: the other output's gradient is absent, not zero-filled wrongly."""
    efn, tfn, arrays = _case("lstm", True)
    e = [ember.tensor(a, requires_grad=True) for a in arrays]
    efn(*e)[which].sum().backward()
    if torch is not None:
        t = [torch.tensor(a, requires_grad=True) for a in arrays]
        tfn(*t)[which].sum().backward()
        for a, b in zip(e, t, strict=True):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-13)
    assert ember.autograd.gradcheck(lambda *a: efn(*a)[which], [ember.tensor(a, requires_grad=True) for a in arrays])


def test_anomaly_mode_gives_the_same_gradients():
    """Anomaly mode runs backward on Tensors (first order through the kernels): the same gradients."""
    efn, _, arrays = _case("lstm", True)
    grads = []
    for anomaly in (False, True):
        xs = [ember.tensor(a, requires_grad=True) for a in arrays]
        with ember.autograd.detect_anomaly(anomaly):
            h, c = efn(*xs)
            (h * 2 + c).sum().backward()
        grads.append([x.grad.numpy() for x in xs])
    for a, b in zip(*grads, strict=True):
        np.testing.assert_array_equal(a, b)


def _stacked(lib, seq, cells, dtype):
    """Two stacked cells unrolled over ``seq`` (T, N, I) reusing their states; the outputs of every step."""
    h = [lib.zeros(seq.shape[1], c.hidden_size, dtype=dtype) for c in cells]
    c = [lib.zeros(seq.shape[1], cl.hidden_size, dtype=dtype) for cl in cells]
    outs = []
    for x in seq:
        inp = x
        for k, cell in enumerate(cells):
            if isinstance(cell, lib.nn.LSTMCell):
                h[k], c[k] = cell(inp, (h[k], c[k]))
            else:
                h[k] = cell(inp, h[k])
            inp = h[k]
        outs.append(inp)
    return lib.stack(outs, 0), h, c


@needs_torch
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell", "RNNCell"])
def test_states_reused_across_steps_match_torch(name, bias):
    """Stacked cells over 6 steps, the loss on every step's output and on the first cell's final states: the
    gradients of the input and of every parameter flow back through all steps and equal torch's."""
    mods = {}
    for lib in (torch, ember):
        lib.manual_seed(0)
        cells = [getattr(lib.nn, name)(IN, H, bias=bias), getattr(lib.nn, name)(H, H, bias=bias)]
        mods[lib.__name__] = [c.double() for c in cells]
    for te, tt in zip(mods["ember"], mods["torch"], strict=True):
        te.load_state_dict({k: v.detach().numpy() for k, v in tt.state_dict().items()})
    seq = rng.standard_normal((6, N, IN))
    up = rng.standard_normal((6, N, H))
    res = {}
    for lib in (torch, ember):
        x = lib.tensor(seq, requires_grad=True)
        out, h, c = _stacked(lib, x, mods[lib.__name__], lib.float64)
        loss = (out * lib.tensor(up)).sum() + sum((s * s).sum() for s in h[:1] + c[:1])
        loss.backward()
        params = [p.grad.numpy() for m in mods[lib.__name__] for p in m.parameters()]
        res[lib.__name__] = [out.detach().numpy(), x.grad.numpy(), *params]
    for a, b in zip(res["ember"], res["torch"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_states_reused_across_steps_gradcheck():
    """The unrolled sequence as a function of the input, the initial state and the weights: gradcheck."""
    cell = nn.LSTMCell(2, 3, dtype=ember.float64)
    x = ember.tensor(rng.standard_normal((4, 2, 2)), requires_grad=True)
    h0 = ember.tensor(rng.standard_normal((2, 3)), requires_grad=True)

    def fn(x, h0, w_ih, w_hh, b_ih, b_hh):
        h, c = h0, h0 * 0.5
        outs = []
        for t in range(x.shape[0]):
            h, c = lstm_cell(x[t], h, c, w_ih, w_hh, b_ih, b_hh)
            outs.append(h)
        return ember.stack(outs + [c], 0)

    params = [p.detach().requires_grad_() for p in (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)]
    assert ember.autograd.gradcheck(fn, [x, h0, *params])


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_saturated_gates_are_finite_without_warnings(dtype):
    """Pre-activations of +-1000 (exp overflows there) give torch's values, finite, and no warning."""
    efn, tfn, arrays = _case("lstm", True)
    arrays[0] = arrays[0] * 400.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = [ember.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
        h, c = efn(*e)
        (h + c).sum().backward()
    t = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    th, tc = tfn(*t)
    (th + tc).sum().backward()
    tol = 1e-5 if dtype == "float32" else 1e-12
    for a, b in [(h, th), (c, tc)] + list(zip(e, t, strict=True)):
        a = a.grad if a.grad_fn is None and a.requires_grad else a
        b = b.grad if b.grad_fn is None and b.requires_grad else b
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol * 100)
