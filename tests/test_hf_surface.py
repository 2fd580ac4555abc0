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
