"""``default_collate`` beside PyTorch's: the same batch structure (a list for tuple samples, namedtuples kept,
dicts by key, strings as lists) and the same dtypes."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np
import pytest

import ember
from ember.data import default_collate

torch = pytest.importorskip("torch")
from torch.utils.data import default_collate as torch_collate  # noqa: E402

Pair = namedtuple("Pair", ["a", "b"])


def _shape(x: Any) -> Any:
    """The structure of a batch with each tensor as (dtype name, shape, values)."""
    if hasattr(x, "dtype") and hasattr(x, "shape") and not isinstance(x, np.ndarray):
        return ("tensor", str(x.dtype).split(".")[-1], tuple(x.shape), np.asarray(x.tolist()).tolist())
    if isinstance(x, dict):
        return {k: _shape(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, tuple(_shape(v) for v in x))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_shape(v) for v in x])
    return x


SAMPLES = [
    [(1, 2.0), (3, 4.0)],
    [[1, True], [2, False]],
    [{"x": np.array([1.0, 2.0], dtype=np.float32), "n": "a"}, {"x": np.array([3.0, 4.0], dtype=np.float32), "n": "b"}],
    [Pair(1, np.int16(2)), Pair(3, np.int16(4))],
    [(np.array([1, 2]), ("u", 0.5)), (np.array([3, 4]), ("v", 1.5))],
]


@pytest.mark.parametrize("i", range(len(SAMPLES)))
def test_default_collate_like_pytorch(i: int) -> None:
    batch = SAMPLES[i]
    assert _shape(default_collate(batch)) == _shape(torch_collate(batch))


def test_collated_tuple_batch_can_be_edited_in_place() -> None:
    batch = default_collate([(ember.ones(2), 0), (ember.zeros(2), 1)])
    batch[0] = batch[0] * 2  # a list, as PyTorch's: a training loop may replace its entries
    assert batch[0].shape == (2, 2)
