"""Tensor creation, properties, conversion, devices and value semantics."""

import numpy as np
import pytest

import ember


def test_creation_and_properties():
    t = ember.zeros(2, 3)
    assert t.shape == (2, 3) and t.size() == (2, 3) and t.size(1) == 3
    assert t.dtype == ember.float32 and t.ndim == 2 and t.dim() == 2
    assert t.numel() == 6 and t.nbytes == 24 and t.element_size() == 4
    assert ember.ones(3, dtype=ember.int64).tolist() == [1, 1, 1]
    assert ember.full((2,), 7).dtype == ember.int64
    assert ember.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert ember.linspace(0, 1, 5).shape == (5,)
    assert ember.eye(3).sum().item() == 3.0
    assert ember.tensor([1, 2]).dtype == ember.int64
    assert ember.tensor([1.0]).dtype == ember.float32
    assert ember.tensor([True]).dtype == ember.bool_
    assert ember.zeros_like(t, dtype=ember.float64).dtype == ember.float64
    assert ember.randint(0, 5, (100,)).max().item() < 5


def test_from_numpy_shares_memory_and_tensor_copies():
    a = np.arange(4.0)
    t = ember.from_numpy(a)
    a[0] = 10
    assert t[0].item() == 10.0 and t.dtype == ember.float64
    c = ember.tensor(a)
    a[1] = 20
    assert c[1].item() == 1.0


def test_manual_seed_reproducible():
    ember.manual_seed(3)
    a = ember.randn(5)
    ember.manual_seed(3)
    b = ember.randn(5)
    assert a.tolist() == b.tolist()
    state = ember.get_rng_state()
    x = ember.rand(3)
    ember.set_rng_state(state)
    assert ember.rand(3).tolist() == x.tolist()


def test_conversions():
    t = ember.tensor([1.5, -2.5], device="cpu")  # (the default device may be cuda: make test-cuda)
    assert t.long().dtype == ember.int64 and t.int().dtype == ember.int32
    assert t.double().dtype == ember.float64 and t.half().dtype == ember.float16
    assert t.bool().tolist() == [True, True]
    assert t.to(ember.float64).dtype == ember.float64
    assert t.to("cpu") is t
    assert t.clone() is not t and t.clone().tolist() == t.tolist()
    assert float(ember.tensor(2.5)) == 2.5 and int(ember.tensor(3)) == 3
    assert ember.tensor(4.0).item() == 4.0
    with pytest.raises(RuntimeError, match="detach"):
        ember.ones(2, requires_grad=True).numpy()


def test_default_dtype():
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.tensor([1.0]).dtype == ember.float64
        assert (ember.arange(3) / 2).dtype == ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(TypeError, match="floating"):
        ember.set_default_dtype(ember.int64)


def test_value_semantics():
    a = ember.zeros(3)
    b = a  # assignment shares
    b += 1
    assert a.tolist() == [1.0, 1.0, 1.0]
    c = a + 1  # operations return new tensors
    assert c is not a and a.tolist() == [1.0, 1.0, 1.0]
    v = a[1:]  # basic slicing is a view
    v.fill_(5.0)
    assert a.tolist() == [1.0, 5.0, 5.0]
    m = ember.arange(6.0).reshape(2, 3)
    m.T[0, 1] = -1.0  # transpose is a view
    assert m[1, 0].item() == -1.0


def test_indexing_kinds():
    x = ember.arange(12).reshape(3, 4)
    assert x[1].tolist() == [4, 5, 6, 7]
    assert x[:, -1].tolist() == [3, 7, 11]
    assert x[None, 0, ...].shape == (1, 4)
    assert x[x > 9].tolist() == [10, 11]
    assert x[ember.tensor([2, 0])][:, 0].tolist() == [8, 0]
    x[0, :] = 0
    assert x.sum().item() == 66 - 6


def test_device_parsing():
    assert str(ember.device("cuda")) == "cuda:0"
    assert ember.device("cpu") == "cpu"
    with pytest.raises(ValueError, match="unknown device"):
        ember.device("tpu")


def test_assigning_data_replaces_the_values_and_keeps_the_tensor():
    # PyTorch's ``p.data = q``: any shape and dtype; identity, requires_grad and .grad stay
    p = ember.nn.Parameter(ember.ones(2, 3))
    (p * 2).sum().backward()
    grad = p.grad
    q = ember.arange(4, dtype=ember.float64)
    p.data = q
    assert p.shape == (4,) and p.dtype == ember.float64 and p.requires_grad and p.grad is grad
    assert p.tolist() == [0.0, 1.0, 2.0, 3.0]
    p.data.add_(1)  # shares q's memory, as in PyTorch
    assert q.tolist() == [1.0, 2.0, 3.0, 4.0]
    p.grad = None
    (p * p).sum().backward()
    assert p.grad.tolist() == [2.0, 4.0, 6.0, 8.0]
    v = ember.zeros(3)
    w = v[1:]
    w.data = ember.ones(5)  # no longer a view: in-place writes stay out of the old base
    w.add_(1)
    assert v.tolist() == [0.0, 0.0, 0.0] and w.tolist() == [2.0] * 5
    with pytest.raises(TypeError, match=r"Tensor\.data must be set to a Tensor, got list"):
        p.data = [1.0]
