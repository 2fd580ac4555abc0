"""The Learner's precision (Lightning's names): "16-mixed" with its GradScaler, "bf16-mixed", "32"."""

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import backends
from ember.data import DataLoader, TensorDataset
from ember.train import Learner


def _data(device=None):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 6)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    ds = TensorDataset(ember.tensor(x, device=device), ember.tensor(y, device=device))
    return DataLoader(ds, batch_size=16), DataLoader(ds, batch_size=64)


def _learner(precision, tmp_path, **kw):
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = ember.optim.SGD(model.parameters(), lr=0.3)
    return Learner(model, opt, F.cross_entropy, metrics=["loss", "accuracy"], checkpoint_dir=tmp_path,
                   progress=False, plot=False, precision=precision, **kw)  # fmt: skip


def test_16_mixed_trains_with_a_grad_scaler_saved_in_checkpoints(tmp_path):
    train, valid = _data()
    learner = _learner("16-mixed", tmp_path, grad_clip_norm=5.0)
    hist = learner.fit(train, valid, epochs=3)
    assert hist[-1]["train_loss"] < hist[0]["train_loss"] and hist[-1]["valid_accuracy"] > 0.8
    assert isinstance(learner.scaler, ember.amp.GradScaler) and learner.scaler.get_scale() == 2.0**16
    assert {p.dtype for p in learner.model.parameters()} == {ember.float32}
    learner.scaler.update(1024.0)  # resuming restores the saved scale
    learner._save(3, hist[-1])
    again = _learner("16-mixed", tmp_path)
    again.fit(train, valid, epochs=4, resume=True)
    assert again.scaler.get_scale() == 1024.0


def test_bf16_mixed_on_torch_trains(tmp_path):
    pytest.importorskip("torch")
    with backends.use("torch"):
        train, valid = _data()
        learner = _learner("bf16-mixed", tmp_path)
        hist = learner.fit(train, valid, epochs=3)
    assert hist[-1]["train_loss"] < hist[0]["train_loss"] and learner.scaler is None


def test_precision_is_checked(tmp_path):
    with pytest.raises(ValueError, match=r"precision must be one of \['16-mixed', '32', 'bf16-mixed'\], got 'fp16'"):
        _learner("fp16", tmp_path)


def test_bf16_mixed_on_numpy_trains(tmp_path):  # bfloat16 from ml_dtypes, each op in float32 rounded once
    numpy_cpu = backends.get("numpy").device
    with backends.use("numpy"), ember.device(numpy_cpu):
        train, valid = _data()
        learner = _learner("bf16-mixed", tmp_path)
        hist = learner.fit(train, valid, epochs=3)
    assert hist[-1]["train_loss"] < hist[0]["train_loss"] and learner.scaler is None
