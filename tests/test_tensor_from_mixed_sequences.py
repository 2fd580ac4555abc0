"""``tensor(data)`` of nested sequences holding NumPy scalars or arrays, or tensors: PyTorch promotes their
dtypes with the Python numbers' (``[np.float64(1.0), 2.0]`` is float64), run beside torch."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

CASES = [
    [np.float64(1.0)], [np.float64(1.0), 2.0], [1.0, np.float64(2)], [np.int32(3)], [np.float16(1)],
    (np.float64(1),), [[np.float64(1)]], [np.True_], [np.complex128(1j)], [np.float32(1), 2.0], [np.int32(1), 2],
    [np.int32(1), 2.0], [np.float16(1.0), np.int64(2)], [np.float16(1.0), 2.0], [np.int64(1), True],
    [np.float64(1.0), 1j], [np.array([1.0]), np.array([2.0])], [[np.float32(1.0)], [np.float64(2.0)]],
    [[1.0, 2.0], [3.0, 4.0]], [1, 2], [True, False], [1, 2.5], [],
]  # fmt: skip


def _name(d):
    return str(d).split(".")[-1]


@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy.ndarrays")  # (torch's, on its side)
@pytest.mark.parametrize("data", CASES, ids=[repr(c) for c in CASES])
def test_dtype_and_values_as_torch(data):
    e, t = ember.tensor(data), torch.tensor(data)
    assert _name(e.dtype) == _name(t.dtype)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_the_default_dtype_counts_for_python_floats_beside_numpy_float32():
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    try:
        for data in ([np.float32(1), 2.0], [np.float32(1)], [np.float16(1), 2]):
            assert _name(ember.tensor(data).dtype) == _name(torch.tensor(data).dtype)
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("dt", ["float64", "int32", "float16", "bool"])
def test_tensors_in_a_list_count_with_their_dtypes_as_torch(dt):
    def build(lib):
        one = lib.tensor(1, dtype=getattr(lib, dt))
        return lib.tensor([[one, one], [0, 1]]), lib.tensor([one, one]), lib.tensor([one, 2.0])

    for e, t in zip(build(ember), build(torch), strict=True):
        assert _name(e.dtype) == _name(t.dtype)
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_legacy_constructor_keeps_the_default_dtype_as_torch():
    assert _name(ember.Tensor([np.float64(1.0)]).dtype) == _name(torch.Tensor([np.float64(1.0)]).dtype)


def test_iter_of_a_0d_tensor_raises_at_once_as_torch():
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            iter(lib.tensor(1.0))
    assert [t.item() for t in ember.tensor([1.0, 2.0])] == [1.0, 2.0]
