"""A backend whose indexing kernels do not report an out-of-range index (CuPy wraps it around, silently): Ember
checks indices and loss targets on the host there (``Backend.host_checks``, ``Backend.check_index``). Run on the
CPU as NumPy with its kernels' own check and its cheap read-back switched off, as CuPy has them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import ember
import ember.nn.functional as F
from ember import backends


@pytest.fixture
def be(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    numpy_be = backends.get("numpy")
    monkeypatch.setattr(numpy_be, "kernels_check_indices", False)
    monkeypatch.setattr(numpy_be, "_cheap_sync", False)
    assert numpy_be.host_checks
    with ember.device(numpy_be.device):
        yield numpy_be


def test_an_index_array_out_of_range_is_refused_before_the_kernel(be: object) -> None:
    x = ember.arange(6.0).reshape(2, 3)
    with pytest.raises(IndexError, match=r"index out of range for dim 0 of size 2 \(tensor of shape \(2, 3\)\)"):
        x[ember.tensor([0, 2])]
    with pytest.raises(IndexError, match=r"index out of range for dim 1 of size 3"):
        x[:, ember.tensor([-4])]
    with pytest.raises(IndexError, match=r"index out of range for dim 0 of size 3"):
        x[1, ember.tensor([3])]  # an integer and an index tensor: the tensor indexes what the integer left
    with pytest.raises(IndexError, match=r"index out of range for dim 1 of size 3"):
        x[..., ember.tensor([5])] = 1.0
    assert x[ember.tensor([-1, 0]), ember.tensor([2, -3])].tolist() == [5.0, 0.0]  # negative ones in range count
    assert x[x > 2].tolist() == [3.0, 4.0, 5.0]  # masks are not index values


def test_ops_and_losses_check_on_such_a_backend(be: object) -> None:
    with pytest.raises(IndexError, match=r"gather: index out of range for dim 1 of size 4"):
        ember.zeros(3, 4).gather(1, ember.tensor([[4]]))
    with pytest.raises(IndexError, match=r"embedding: index 9 is out of range for 4"):
        F.embedding(ember.tensor([9]), ember.zeros(4, 2))
    with pytest.raises(IndexError, match="out of range for 5 classes"):
        F.cross_entropy(ember.zeros(2, 5), ember.tensor([1, 7]))
    with pytest.raises(ValueError, match=r"target values must be in \[0, 1\]"):
        F.binary_cross_entropy(ember.full((2,), 0.5), ember.tensor([0.0, 2.0]))
    with pytest.raises(ValueError, match="var has negative"):
        F.gaussian_nll_loss(ember.zeros(2, 3), ember.zeros(2, 3), -ember.ones(2, 3))


def test_random_parameters_are_checked_on_such_a_backend(be: object) -> None:
    with pytest.raises(ValueError, match=r"normal: expects all elements of std >= 0\.0"):
        ember.normal(ember.zeros(2), ember.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="poisson: rates must be non-negative"):
        ember.poisson(ember.tensor([1.0, -1.0]))
