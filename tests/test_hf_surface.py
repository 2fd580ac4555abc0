"""The pieces of PyTorch's surface Hugging Face transformers touches, each run under PyTorch and Ember alike."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_expand_without_repeats_is_writable(lib):
    base = lib.arange(6)
    e = base.expand((1, -1))  # adds a size-1 dim only: no element repeats, so it can be written (HF's position_ids)
    e.copy_(lib.arange(6).expand((1, -1)) * 2)
    assert base.tolist() == [0, 2, 4, 6, 8, 10]
    assert e.tolist() == [[0, 2, 4, 6, 8, 10]]


@pytest.mark.parametrize("persistent", [True, False])
def test_buffer_persistent(persistent):
    def build(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.ids = lib.nn.Buffer(lib.arange(3), persistent=persistent)

        return M()

    a, b = build(torch), build(ember)
    assert list(a.state_dict()) == list(b.state_dict())
    assert [n for n, _ in a.named_buffers()] == [n for n, _ in b.named_buffers()] == ["ids"]
    np.testing.assert_array_equal(b.ids.numpy(), a.ids.numpy())


def _transform(lib):
    mod = __import__(f"{lib.__name__}._dynamo._trace_wrapped_higher_order_op", fromlist=["TransformGetItemToIndex"])
    return mod.TransformGetItemToIndex


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_transform_getitem_to_index(lib):
    b = lib.arange(6).reshape(2, 3)
    with _transform(lib)():
        y = b[lib.tensor(1)]  # a 0-d tensor index: advanced indexing, a copy (outside: a view)
        w = b[lib.tensor(1), 1:]  # not all tensors: unchanged (a view)
    v = b[lib.tensor(0)]
    y.fill_(-1), w.fill_(-2), v.fill_(-3)
    assert b.tolist() == [[-3, -3, -3], [3, -2, -2]] and y.tolist() == [-1, -1, -1]
    x = lib.arange(6.0).reshape(2, 3).requires_grad_()
    with _transform(lib)():
        y, z = x[lib.tensor(1)], x[lib.tensor(1), lib.tensor([0, 2])]
    assert y.tolist() == [3.0, 4.0, 5.0] and z.tolist() == [3.0, 5.0]
    (y.sum() + 2 * z.sum()).backward()
    assert x.grad.tolist() == [[0.0, 0.0, 0.0], [3.0, 1.0, 3.0]]


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_dynamo_markers(lib):
    def f(x):
        return x + 1

    assert lib._dynamo.allow_in_graph(f) is f
    assert lib._dynamo.assume_constant_result(f) is f and f._dynamo_marked_constant is True
    with pytest.raises(AssertionError):
        lib._dynamo.allow_in_graph(3)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_cuda_graph_names_without_cuda(lib):
    if lib.cuda.is_available():
        pytest.skip("checks the CPU-only behaviour")
    assert isinstance(lib.cuda.CUDAGraph, type) and isinstance(lib.cuda.graph, type)
    for make in (lib.cuda.CUDAGraph, lambda: lib.cuda.graph(None), lib.cuda.graph_pool_handle):
        with pytest.raises(RuntimeError):
            make()
    with lib.cuda.StreamContext(None) as s:  # None: no stream change, usable without CUDA
        assert s is None
    assert isinstance(lib.cuda.stream(None), lib.cuda.StreamContext)
