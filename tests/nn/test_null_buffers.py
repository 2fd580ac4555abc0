"""A buffer registered as None stays a buffer when a tensor is assigned to it later (PyTorch's rule): it was made a
parameter, and trained."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def _kinds(lib):
    m = lib.nn.Module()
    m.register_buffer("mask", None)
    m.register_buffer("extra", None, persistent=False)
    m.mask = lib.ones(2)
    first = (sorted(n for n, _ in m.named_buffers()), sorted(n for n, _ in m.named_parameters()))
    m.mask = None
    m.mask = lib.zeros(3)
    m.extra = lib.ones(1)
    second = (sorted(n for n, _ in m.named_buffers()), sorted(n for n, _ in m.named_parameters()))
    return first, second, sorted(m.state_dict())


def test_a_none_buffer_assigned_a_tensor_is_a_buffer_as_in_torch():
    assert _kinds(ember) == _kinds(torch)
    assert _kinds(ember)[1] == (["extra", "mask"], [])
