"""Tensor queries PyTorch programs make, asked the same way of both libraries: ``in``, ``size()`` (a ``Size``),
``is_contiguous`` with a memory format, ``dim_order``, a node's ``name()``, ``Generator.device``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _answers(t: Any) -> list[Any]:
    x = t.tensor(np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5))
    nhwc = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)  # channels_last strides, made by hand
    ncdhw = t.zeros(1, 2, 3, 4, 5).permute(0, 2, 3, 4, 1).contiguous().permute(0, 4, 1, 2, 3)
    out: list[Any] = [3.0 in x, 1000.0 in x, t.tensor(7.0) in x, True in t.tensor([False, True])]
    for a in (x, nhwc, x.transpose(2, 3), t.zeros(2, 3, 1, 1), ncdhw):
        out.append(
            (
                a.is_contiguous(),
                a.is_contiguous(memory_format=t.contiguous_format),
                a.is_contiguous(memory_format=t.channels_last),
                a.is_contiguous(memory_format=t.channels_last_3d),
                a.dim_order(),
            )
        )
    out += [x.size().numel(), isinstance(x.size(), t.Size), tuple(x.size()), x.size() == (2, 3, 4, 5), x.size(-1)]
    y = t.ones(2, requires_grad=True)
    out += [(y * 2).grad_fn.name(), (y.exp()).grad_fn.name(), str(t.Generator().device)]
    out.append((x.is_contiguous(memory_format=t.preserve_format), nhwc.is_contiguous(memory_format=t.preserve_format)))
    with pytest.raises(RuntimeError):
        _ = "a" in x
    return out


def test_tensor_queries_like_pytorch() -> None:
    assert _answers(ember) == _answers(torch)
