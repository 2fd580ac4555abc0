"""Module.half/.bfloat16/.float/.double/.to(dtype): floating parameters and buffers convert in place (same
Param objects), integer buffers stay, gradients follow; bfloat16 on NumPy and integer dtypes are refused."""

import pytest

import ember
import ember.nn as nn
from ember import backends


def _model():
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
    m(ember.randn(2, 1, 6, 6)).sum().backward()
    return m


@pytest.mark.parametrize(("method", "dtype"), [("half", ember.float16), ("float", ember.float32),
                                               ("double", ember.float64)])  # fmt: skip
def test_conversions_keep_params_and_convert_floats_and_grads(method, dtype):
    m = _model()
    params = list(m.parameters())
    assert getattr(m, method)() is m
    assert list(m.parameters()) == params and all(p is q for p, q in zip(m.parameters(), params, strict=True))
    assert {p.dtype for p in m.parameters()} == {dtype} and {p.grad.dtype for p in m.parameters()} == {dtype}
    assert m[1].running_mean.dtype is dtype and m[1].num_batches_tracked.dtype is ember.int64
    assert m(ember.randn(2, 1, 6, 6, dtype=dtype)).dtype is dtype  # float16 convolution runs on NumPy too
    assert m.to(ember.float32)[3].weight.dtype is ember.float32


def test_bfloat16_on_torch_and_numpy():
    with backends.use("numpy"), ember.device("cpu"):  # NumPy's CPU (make test-cuda's default device is cuda)
        m = _model().bfloat16()
        assert {p.dtype for p in m.parameters()} == {ember.bfloat16}
        assert m(ember.randn(2, 1, 6, 6, dtype=ember.bfloat16)).dtype is ember.bfloat16
    pytest.importorskip("torch")
    with backends.use("torch"):
        m = _model().bfloat16()
        assert {p.dtype for p in m.parameters()} == {ember.bfloat16}
        assert m(ember.randn(2, 1, 6, 6, dtype=ember.bfloat16)).dtype is ember.bfloat16


def test_integer_dtypes_are_refused():
    with pytest.raises(TypeError, match=r"floating-point parameters.*got dtype=ember.int64"):
        _model().to(ember.int64)
