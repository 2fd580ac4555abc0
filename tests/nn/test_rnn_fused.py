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
N, IN, H = 2, 2, 3


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


# -- whole layers: one node per layer and direction -----------------------------------------------------
LAYERS = [
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {"bias": False}),
    ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("GRU", {"bias": False}),
    ("RNN", {"num_layers": 2, "bidirectional": True}),
    ("RNN", {"nonlinearity": "relu", "bias": False, "batch_first": True}),
]


def _layer_pair(name, kwargs):
    t = getattr(torch.nn, name)(IN, H, **kwargs).double()
    e = getattr(nn, name)(IN, H, **kwargs, dtype=ember.float64)
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    return e, t


def _layer_run(lib, m, x, states, up):
    xs = [lib.tensor(a, requires_grad=True) for a in [x, *states]]
    hx = None if not states else (tuple(xs[1:]) if len(states) == 2 else xs[1])
    out, h = m(xs[0], hx)
    flat = [out, *(h if isinstance(h, tuple) else (h,))]
    loss = sum((o * lib.tensor(u)).sum() for o, u in zip(flat, up, strict=False))
    loss.backward()
    return [o.detach().numpy() for o in flat] + [a.grad.numpy() for a in xs] + [p.grad.numpy() for p in m.parameters()]


@needs_torch
@pytest.mark.parametrize("with_state", [True, False])
@pytest.mark.parametrize(("name", "kwargs"), LAYERS)
def test_layer_matches_torch_values_and_gradients(name, kwargs, with_state):
    """Outputs, final states and the gradients of input, initial states and every weight equal torch's."""
    e, t = _layer_pair(name, kwargs)
    dirs = 2 if kwargs.get("bidirectional") else 1
    layers = kwargs.get("num_layers", 1)
    hout = kwargs.get("proj_size") or H
    x = rng.standard_normal((2, 5, IN) if kwargs.get("batch_first") else (5, 2, IN))
    states = []
    if with_state:
        states = [rng.standard_normal((layers * dirs, 2, hout))]
        if name == "LSTM":
            states.append(rng.standard_normal((layers * dirs, 2, H)))
    with torch.no_grad():
        shapes = [tuple(o.shape) for o in _flat_out(t(torch.tensor(x)))]
    up = [rng.standard_normal(s) for s in shapes]
    got, want = _layer_run(ember, e, x, states, up), _layer_run(torch, t, x, states, up)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _flat_out(res):
    out, h = res
    return [out, *(h if isinstance(h, tuple) else (h,))]


GRADCHECK_LAYERS = [
    ("LSTM", 3, {"proj_size": 2, "bidirectional": True}),
    ("GRU", 2, {"bidirectional": True, "batch_first": True}),
    ("RNN", 2, {"num_layers": 2}),
]


@pytest.mark.parametrize(("name", "hidden", "kwargs"), GRADCHECK_LAYERS)
def test_layer_gradcheck_first_and_second_order(name, hidden, kwargs):
    """The layer as a function of its input and every parameter (float64): gradcheck and gradgradcheck."""
    ember.manual_seed(1)
    m = getattr(nn, name)(2, hidden, **kwargs, dtype=ember.float64)
    names = [k for k, _ in m.named_parameters()]
    x = ember.tensor(rng.standard_normal((2, 1, 2)), requires_grad=True)

    def fn(x, *ps):
        m._params.update(zip(names, ps, strict=True))  # the layer on these tensors
        out, h = m(x)
        return (out, *(h if isinstance(h, tuple) else (h,)))

    ps = [p.detach().requires_grad_() for p in m.parameters()]
    assert ember.autograd.gradcheck(fn, [x, *ps])
    if kwargs.get("bidirectional"):  # second order on one direction (a bidirectional LSTM takes a minute)
        m = getattr(nn, name)(2, hidden, **{**kwargs, "bidirectional": False}, dtype=ember.float64)
        names = [k for k, _ in m.named_parameters()]
        ps = [p.detach().requires_grad_() for p in m.parameters()]
    assert ember.autograd.gradgradcheck(lambda x, *p: fn(x, *p)[0], [x, *ps])


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_layer_is_one_node_per_layer_and_direction(name):
    m = getattr(nn, name)(IN, H)
    out, _ = m(ember.randn(7, 2, IN))
    node = out.grad_fn
    assert type(node).__name__ == f"{name}Layer"
    assert list(node.inputs[2 if name != "LSTM" else 3 :][:2]) == [m.weight_ih_l0, m.weight_hh_l0]


def test_layer_anomaly_mode_gives_the_same_gradients():
    grads = []
    for anomaly in (False, True):
        ember.manual_seed(3)
        m = nn.LSTM(IN, H, num_layers=2, bidirectional=True, proj_size=2)
        with ember.autograd.detect_anomaly(anomaly):
            out, (h, c) = m(ember.randn(4, 2, IN))
            (out.sum() + h.sum() + 2 * c.sum()).backward()
        grads.append([p.grad.numpy() for p in m.parameters()])
    for a, b in zip(*grads, strict=True):
        np.testing.assert_array_equal(a, b)


def test_cells_export_to_onnx_and_run_in_onnxruntime(tmp_path):
    """A model stepping LSTMCell, GRUCell and RNNCell exports (each step as its reference graph) with a dynamic
    batch, and onnxruntime reproduces it."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    import ember.onnx as eo

    class Steps(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm, self.gru, self.rnn = nn.LSTMCell(IN, H), nn.GRUCell(H, H), nn.RNNCell(H, H)

        def forward(self, x):
            h, c = self.lstm(x[0])
            h, c = self.lstm(x[1], (h, c))
            return self.rnn(self.gru(h), c)

    m = Steps().eval()
    x = ember.randn(2, 3, IN)
    path = tmp_path / "cells.onnx"
    eo.export(m, x, str(path), input_names=["x"], dynamic_axes={"x": [1]})
    sess = ort.InferenceSession(str(path))
    for batch in (3, 5):
        xb = ember.randn(2, batch, IN)
        (got,) = sess.run(None, {"x": xb.numpy()})
        with ember.no_grad():
            np.testing.assert_allclose(got, m(xb).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("features", [1, 6])
def test_numpy_cell_gate_major_gives_the_layer_steps_bits(monkeypatch, dtype, features):
    """The NumPy LSTM cell keeps its gates gate-major (4, N, H); the layer's step keeps them as the products give
    them (N, 4H). Without the per-gate products of small-matrix BLAS kernels (``_lstm_gate_major``, whose sums
    run in another order: off here), the same operations in the same order: a one-step layer without biases
    equals the cell bit for bit, forward and every gradient (one OpenBLAS thread or not, both run the same
    products)."""
    be = ember.backends.get("numpy")
    monkeypatch.setattr(be, "_small_gemm", 0.0)
    rs = np.random.RandomState(3)
    n, hs = 7, 5
    x, h, c = (rs.randn(*s).astype(dtype) for s in ((n, features), (n, hs), (n, hs)))
    w_ih, w_hh = rs.randn(4 * hs, features).astype(dtype), rs.randn(4 * hs, hs).astype(dtype)
    gh, gc = rs.randn(n, hs).astype(dtype), rs.randn(n, hs).astype(dtype)
    h1, c1, saved = be.lstm_cell(x, h, c, w_ih, w_hh, None, None)
    assert saved[0].shape == (4, n, hs)
    out, h_t, c_t, lsaved = be.lstm_layer(x[None], h, c, w_ih, w_hh, None, None, None, False)
    assert np.array_equal(h1, h_t) and np.array_equal(c1, c_t) and np.array_equal(out[0], h1)
    cell = be.lstm_cell_backward(gh, gc, saved, x, h, c, w_ih, w_hh, (True,) * 5 + (False, False))
    layer = be.lstm_layer_backward(
        None, gh, gc, lsaved, x[None], h, w_ih, w_hh, None, out, False, (True,) * 5 + (False,) * 3
    )
    gx, gh0, gc0, gw_ih, gw_hh = cell[:5]
    assert np.array_equal(gx, layer[0][0]) and np.array_equal(gh0, layer[1]) and np.array_equal(gc0, layer[2])
    assert np.array_equal(gw_ih, layer[3]) and np.array_equal(gw_hh, layer[4])
