"""Dropout as operators keeping a bool mask (``F.dropout``, ReLU + dropout, residual add + dropout in the transformer
layers): the same numbers and gradients as the composites they replaced, over the documented mask (the
``expected_keep`` fixture), gradcheck, second order, and the node not holding its input."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.nn.functional._dropout_ops import dropout_add, relu_dropout
from ember.testing import check_op

rng = np.random.default_rng(31)


def r(*shape):
    return rng.standard_normal(shape)


def _composite(x, p, keep):
    return x * (keep(x, x.shape, p).to(x.dtype) * (1.0 / (1.0 - p)))


CASES = {
    "dropout": (lambda x, z, k: F.dropout(x, 0.3), lambda x, z, k: _composite(x, 0.3, k)),
    "relu_dropout": (lambda x, z, k: relu_dropout(x, 0.3, True), lambda x, z, k: _composite(F.relu(x), 0.3, k)),
    "dropout_add": (lambda x, z, k: dropout_add(x, z, 0.3, True), lambda x, z, k: x + _composite(z, 0.3, k)),
    "add_eval": (lambda x, z, k: dropout_add(x, z, 0.3, False), lambda x, z, k: x + z),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_same_numbers_and_gradients_as_the_composite(name, dtype, expected_keep):
    fused, composite = CASES[name]
    a, b, g = r(4, 5), r(4, 5), r(4, 5)
    a[0, :3] = [0.0, np.inf, -np.inf]
    res = []
    for fn in (fused, composite):
        x = ember.tensor(a, dtype=getattr(ember, dtype), requires_grad=True)
        z = ember.tensor(b, dtype=getattr(ember, dtype), requires_grad=True)
        ember.manual_seed(7)
        y = fn(x, z, expected_keep)
        after = ember.rand(2).numpy()
        y.backward(ember.tensor(g, dtype=y.dtype))
        res.append((y.detach().numpy(), after, x.grad.numpy(), None if z.grad is None else z.grad.numpy()))
    for u, v in zip(*res, strict=True):
        if v is not None:
            np.testing.assert_array_equal(u, v)  # values, the generator's next numbers, gradients


@pytest.mark.parametrize("name", ["dropout", "relu_dropout", "dropout_add"])
def test_gradcheck_and_second_order(name):
    fused = CASES[name][0]

    def fn(x, z):
        ember.manual_seed(2)
        return fused(x, z, None)

    check_op(fn, r(3, 4) + 0.1, r(3, 4), second_order=True, name=name)


def test_nodes_do_not_hold_their_inputs():
    x = ember.tensor(r(8, 8), requires_grad=True)
    h = x * 2.0
    for y in (F.dropout(h, 0.5), relu_dropout(h, 0.5, True), dropout_add(h, h, 0.5, True)):
        for inp in y.grad_fn.inputs:
            if isinstance(inp, ember.Tensor) and inp.dtype.is_floating_point:
                assert inp._data is not h._data and inp.shape == h.shape  # a zero-strided stand-in
    y.sum().backward()
    assert x.grad is not None


class _OtherDropout(nn.Dropout):
    """Not exactly ``nn.Dropout``: the layers run it as a module (the composite path)."""


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_fused_equals_composite_while_training(norm_first):
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.25, norm_first=norm_first, dtype=ember.float64)
    other = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.25, norm_first=norm_first, dtype=ember.float64,
                                       activation=lambda t: F.relu(t))  # fmt: skip
    other.load_state_dict(layer.state_dict())
    for name in ("dropout", "dropout1", "dropout2"):
        setattr(other, name, _OtherDropout(0.25))
    x = r(5, 3, 8)
    outs = []
    for m in (layer, other):
        xt = ember.tensor(x, requires_grad=True)
        ember.manual_seed(4)
        y = m(xt)
        y.backward(ember.tensor(np.linspace(-1, 1, y.numel()).reshape(y.shape)))
        outs.append([y.detach().numpy(), xt.grad.numpy()] + [p.grad.numpy() for p in m.parameters()])
    for a, b in zip(*outs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
