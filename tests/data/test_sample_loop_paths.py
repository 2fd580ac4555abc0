"""The per-sample paths a map-style Dataset takes: ``x[i]`` without an operator node when nothing is recorded
(still a view: writes reach the base, in-place changes of the base show through, the version counts), and
``default_collate`` stacking tensors on their own backend; each as PyTorch behaves."""

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, Dataset, default_collate

torch = pytest.importorskip("torch")


def test_int_index_is_a_view_as_torch():
    for lib in (torch, ember):
        x = lib.arange(6.0).reshape(3, 2)
        v = x[1]
        v[0] = 10
        x[2].mul_(2)
        b = x[1]
        x.add_(1)
        assert x.tolist() == [[1.0, 2.0], [11.0, 4.0], [9.0, 11.0]]
        assert b.tolist() == [11.0, 4.0] and x[-1].tolist() == [9.0, 11.0]
        with pytest.raises(IndexError):
            x[3]


def test_int_index_still_records_a_gradient_when_needed():
    for lib in (torch, ember):
        w = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        (w[1] * lib.tensor([5.0, 6.0])).sum().backward()
        assert w.grad.tolist() == [[0.0, 0.0], [5.0, 6.0]]


def test_collate_keeps_dtype_and_values_as_torch():
    for dt in ("float32", "int64", "bool", "float64"):
        samples = [np.arange(6).reshape(2, 3) + i for i in range(4)]
        e = default_collate([ember.tensor(s).to(getattr(ember, dt)) for s in samples])
        t = torch.utils.data.default_collate([torch.tensor(s).to(getattr(torch, dt)) for s in samples])
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    with pytest.raises(ValueError, match="sample 1 has shape"):
        default_collate([ember.zeros(2), ember.zeros(3)])


def test_a_map_style_dataset_batches_as_torch():
    data = np.arange(40.0).reshape(10, 4)

    def batches(lib):
        x = lib.tensor(data)

        class DS(lib.utils.data.Dataset if lib is torch else Dataset):
            def __len__(self):
                return 10

            def __getitem__(self, i):
                return x[i], int(i)

        loader = (lib.utils.data.DataLoader if lib is torch else DataLoader)(DS(), batch_size=4)
        return [(xb.numpy().copy(), yb.numpy().copy()) for xb, yb in loader]

    for (ex, ey), (tx, ty) in zip(batches(ember), batches(torch), strict=True):
        np.testing.assert_array_equal(ex, tx)
        np.testing.assert_array_equal(ey, ty)
