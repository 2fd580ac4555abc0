"""Bad indices on an accelerator: refused on the host, without a device sync, when the host knows them.

On CUDA a kernel fed an out-of-range index fails on the device (a device-side assert), which leaves the
process's CUDA context unusable. Ember cannot read an index back without waiting for the device, but it knows
the range of every integer array it uploaded from host data (``Backend.known_range``): those are checked
before any kernel runs. Here the torch CPU backend plays the accelerator (``cheap_sync`` off), as in
``tests/train/test_host_syncs.py``; no value is read back from a torch tensor.
"""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import backends
from ember._errors import OutOfRangeError, ValueRangeError

READS = ("item", "tolist", "__bool__", "__float__", "__int__", "__index__", "__array__", "cpu", "numpy")


@pytest.fixture
def accel(monkeypatch, torch):
    """The torch CPU backend as an accelerator; any read of a torch tensor's values fails the test."""
    monkeypatch.setattr(backends.get("torch"), "_cheap_sync", False)

    def refuse(name):
        def read(self, *args, **kw):
            raise AssertionError(f"a device value was read back ({name})")

        return read

    with backends.use("torch"):
        x = ember.zeros(3, 4)
        for name in READS:
            monkeypatch.setattr(torch.Tensor, name, refuse(name))
        yield x


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda x: x.gather(1, ember.tensor([[4]])), "gather: index out of range for dim 1 of size 4"),
        (  # a uint8 index is made int64 (torch would read it as a mask): the widened array keeps the known range
            lambda x: x.gather(1, ember.tensor([[4]], dtype=ember.uint8)),
            "gather: index out of range for dim 1 of size 4",
        ),
        (lambda x: x.index_select(0, ember.tensor([3], dtype=ember.uint8)), "index_select: index out of range"),
        (lambda x: x.scatter(1, ember.tensor([[-5]]), 1.0), "scatter: index out of range for dim 1 of size 4"),
        (lambda x: x.index_select(0, ember.tensor([3])), "index_select: index out of range for dim 0 of size 3"),
        (lambda x: x.index_add(0, ember.tensor([7]), ember.ones(1, 4)), "index_add: index out of range"),
        (lambda x: x.index_fill(1, ember.tensor([4]), 0.0), "index_fill: index out of range for dim 1 of size 4"),
        (lambda x: F.embedding(ember.tensor([9]), x), "embedding: index 9 is out of range for 3"),
        (lambda x: x[ember.tensor([0, 3])], "index 3 is out of range for dim 0 of size 3"),
        (lambda x: x[:, ember.tensor([[1], [-5]])], "index -5 is out of range for dim 1 of size 4"),
        (lambda x: x[1, ember.tensor([4])], "index 4 is out of range for dim 0 of size 4"),
        (lambda x: x[[0, 5]], "index 5 is out of range for dim 0 of size 3"),
        (lambda x: x[..., ember.tensor([4])], "index 4 is out of range for dim 1 of size 4"),
        (lambda x: x.__setitem__(ember.tensor([3]), 1.0), "index 3 is out of range for dim 0"),
        (lambda x: F.cross_entropy(x, ember.tensor([0, 4, -100])), "nll_loss: target 4 is out of range for 4"),
        (lambda x: F.one_hot(ember.tensor([5]), 3), "one_hot: class values must be in"),
        (lambda x: x.put(ember.tensor([0, 12]), ember.ones(2)), "put_: index 12 is out of range for 12 elements"),
        (
            lambda x: ember.take_along_dim(x, ember.tensor([[4]]), 1),  # indices broadcast to x: judged before that
            r"take_along_dim: index out of range for dim 1 of size 4 \(got 4..4\)",
        ),
    ],
)
def test_known_bad_index_is_refused_before_any_kernel(accel, call, match):
    with pytest.raises(RuntimeError, match=match) as info:  # every Ember error is also a RuntimeError
        call(accel)
    assert isinstance(info.value, OutOfRangeError if "one_hot" not in match else ValueRangeError)


@pytest.mark.parametrize("row", [4, -5])
def test_the_backends_row_scatter_add_refuses_a_known_bad_row(accel, row):
    """``Backend.index_add`` (an embedding's gradient, ``add_at``): refused before torch's ``index_put_``, which
    on CUDA would assert on the device."""
    be = accel._backend
    target, values = be.asarray(np.zeros((4, 3), np.float32)), be.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(OutOfRangeError, match=f"index_add: index {row} is out of range for dim 0 of size 4"):
        be.index_add(target, (be.asarray(np.array([0, row])),), values)


def test_good_indices_pass_and_views_keep_the_range(accel, torch):
    x = ember.arange(12.0).reshape(3, 4)
    idx = ember.tensor([[2, 0], [1, 1]])
    assert x._backend.known_range(idx._data) == (0, 2)
    assert x._backend.known_range(idx.reshape(-1)._data) == (0, 2)  # a view: its base's range bounds it
    out = x.gather(1, idx)
    assert torch.equal(out._data, torch.tensor([[2.0, 0.0], [5.0, 5.0]], device=out._data.device))
    loss = F.cross_entropy(x, ember.tensor([3, -100, 0]))
    assert loss.shape == ()


def test_values_computed_on_the_device_or_changed_in_place_are_not_known(accel):
    be = accel._backend
    idx = ember.tensor([0, 1])
    assert be.known_range((idx + 5)._data) is None  # reading it would wait for the device
    idx.add_(5)
    assert be.known_range(idx._data) is None  # torch's version counter moved: the upload's range is stale


def test_moves_from_the_host_carry_the_range(monkeypatch, torch):
    monkeypatch.setattr(backends.get("torch"), "_cheap_sync", False)
    host = ember.tensor(np.array([4, 2, 7]))  # NumPy backend
    moved = host.to(backends.get("torch"))
    assert moved._backend.known_range(moved._data) == (2, 7)
    with backends.use("torch"):
        assert backends.get("torch").known_range(ember.tensor([1.5, 2.0])._data) is None  # not an index


def test_a_part_of_an_uploaded_index_is_not_judged_by_the_whole(accel, torch):
    """COO indices: row 0 lies in [0, 4) while row 1 reaches 5; the range of the whole (2, n) upload only
    bounds a row, so a row is not refused by it (it was, on an accelerator: sparse mm failed)."""
    x = ember.arange(8.0).reshape(4, 2)
    idx = ember.tensor([[0, 3, 1], [5, 0, 2]])
    assert x._backend.known_range(idx._data) == (0, 5)
    assert x._backend.known_range(idx[0]._data) is None
    out = x.index_select(0, idx[0])
    assert torch.equal(out._data, torch.tensor([[0.0, 1.0], [6.0, 7.0], [2.0, 3.0]], device=out._data.device))
