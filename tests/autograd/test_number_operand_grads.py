"""``x + v``, ``v + x``, ``x * v``, ``v * x`` with a Python number ``v``: their array rules pass the gradient on
(times ``v``) without a shape test, since a number broadcasts nothing. Checked against PyTorch's autograd and
against the exact values, over odd shapes, 0-d, empty, non-contiguous inputs and both float dtypes; a hook that
changes the gradient's shape is still refused by the engine."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

OPS = {
    "x+v": lambda x, v: x + v,
    "v+x": lambda x, v: v + x,
    "x*v": lambda x, v: x * v,
    "v*x": lambda x, v: v * x,
}
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 0, 3)]


def _inputs(shape, dtype, transposed):
    base = np.random.default_rng(len(shape)).standard_normal(shape[::-1] if transposed else shape).astype(dtype)
    return base.T if transposed else base  # .T: a non-contiguous view


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("v", [0.5, 3, -1.25])
def test_number_operand_grads_match_torch(op, shape, dtype, v):
    for transposed in (False, True) if len(shape) == 2 else (False,):
        a = _inputs(shape, dtype, transposed)
        up = np.random.default_rng(1).standard_normal(a.shape).astype(dtype)  # the gradient arriving at the output
        x = ember.tensor(a, requires_grad=True)
        x_nc = x.t() if transposed else x  # (a non-contiguous operand recorded in the graph)
        y = OPS[op](x_nc, v)
        y.backward(ember.tensor(up.T if transposed else up))
        tx = torch.tensor(a, requires_grad=True)
        tx_nc = tx.t() if transposed else tx
        OPS[op](tx_nc, v).backward(torch.tensor(up.T if transposed else up))
        assert y.dtype == x.dtype and tuple(y.shape) == tuple(tx_nc.shape)
        got = x.grad.numpy()
        assert got.shape == a.shape and got.dtype == a.dtype
        np.testing.assert_array_equal(got, tx.grad.numpy())
        np.testing.assert_array_equal(got, up if "+" in op else up * np.asarray(v, dtype=dtype))


@pytest.mark.parametrize("op", OPS)
def test_a_hook_changing_the_gradients_shape_is_refused(op):
    x = ember.randn(3, 4, requires_grad=True)
    y = OPS[op](x, 2.0)
    y.register_hook(lambda g: g.sum(0))  # (4,) where (3, 4) is expected
    with pytest.raises(RuntimeError, match=r"shape \(4,\) for an input of shape \(3, 4\)"):
        y.sum().backward()
