"""TensorDataset gives samples and batches on the device and backend of the tensors it was given, as PyTorch
does (the GPU run: CUDA tensors came back as CPU batches, and ``model(x)`` refused them)."""

import numpy as np

import ember
from ember.data import DataLoader, TensorDataset


def test_samples_and_batches_stay_with_their_tensors(torch):
    other = ember.backends.get("torch").device  # another backend than from_numpy's when NumPy serves the CPU
    x = ember.arange(12.0).reshape(6, 2).to(other)
    y = np.arange(6)
    ds = TensorDataset(x, y)
    xb, yb = next(iter(DataLoader(ds, batch_size=4)))
    assert xb.device.backend == "torch" and xb.tolist() == x[:4].tolist()
    made = ds.tensors[1].device.backend  # what the dataset made of the NumPy array (a default-backend tensor)
    assert yb.device.backend == made and yb.tolist() == [0, 1, 2, 3]
    assert ds[1][0].device.backend == "torch" and ds[1][0].tolist() == [2.0, 3.0]
    assert ds.tensors[0].device.backend == "torch"
