"""``torch.library.custom_op`` with ``register_fake``/``register_autograd``: the same code under PyTorch and Ember."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
_n = itertools.count()


def _name() -> str:
    return f"embertest{next(_n)}"


@LIBS
def test_custom_op_call_and_backward(lib):
    ns = _name()

    def scale(x, k):
        return x * k

    op = lib.library.custom_op(f"{ns}::scale", scale, mutates_args=(), schema="(Tensor x, float k) -> Tensor")
    x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
    y = op(x, 2.0)
    assert y.tolist() == [2.0, -4.0, 6.0] and y.requires_grad
    with pytest.raises(RuntimeError, match="no autograd formula"):
        y.sum().backward()

    def setup(ctx, inputs, output):
        ctx.k = inputs[1]

    lib.library.register_autograd(f"{ns}::scale", lambda ctx, g: (g * ctx.k, None), setup_context=setup)
    ops_ns = getattr(lib.ops, ns)
    y = ops_ns.scale(x, 3.0) + ops_ns.scale.default(x, 1.0)
    (y * lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 8.0, 12.0])
    with lib.no_grad():
        assert not op(x, 2.0).requires_grad


@LIBS
def test_custom_op_fake_on_meta(lib):
    ns = _name()

    @lib.library.custom_op(f"{ns}::two", mutates_args=(), schema="(Tensor x) -> (Tensor, Tensor)")
    def two(x):
        return x + 1, x * 2

    a, b = two(lib.ones(2))
    assert a.tolist() == [2.0, 2.0] and b.tolist() == [2.0, 2.0]
    m = lib.ones(3, device="meta")
    with pytest.raises(RuntimeError, match="no fake impl"):
        two(m)
    lib.library.register_fake(f"{ns}::two", lambda x: (lib.empty_like(x), lib.empty_like(x)))
    a, b = two(m)
    assert a.device.type == "meta" and tuple(b.shape) == (3,)


@LIBS
def test_custom_op_bad_definitions(lib):
    with pytest.raises(ValueError):
        lib.library.custom_op(f"{_name()}::f", lambda x: x, mutates_args=())  # no annotations, no schema
    with pytest.raises(TypeError):
        lib.library.custom_op(f"{_name()}::f", lambda x: x)  # mutates_args is required
