"""The Learner: reaches a known accuracy, resumes exactly, stops early, refuses NaN losses; the CLI."""

import json

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.cli import main
from ember.data import DataLoader, TensorDataset
from ember.optim import SGD, Adam
from ember.train import Callback, EarlyStopping, Learner, NonFiniteLossError


def blobs(n=200, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    centers = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.5]])
    x = (centers[y] + 0.5 * rng.standard_normal((n, 2))).astype(np.float32)
    return TensorDataset(x, y)


def loaders(seed=0):
    return DataLoader(blobs(200, 0), 16, shuffle=True, seed=seed), DataLoader(blobs(100, 1), 50)


def make(tmp=None, **kw):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = Adam(model.parameters(), lr=0.02)
    return Learner(model, opt, F.cross_entropy, checkpoint_dir=tmp, progress=False, **kw)


def test_fit_reaches_a_known_accuracy_and_logs(tmp_path):
    learner = make(tmp_path / "ck", out_dir=tmp_path, metrics=["loss", "accuracy", "top2_accuracy", "lr"])
    history = learner.fit(*loaders(), epochs=5)
    assert history[-1]["valid_accuracy"] >= 0.95
    assert history[-1]["train_top2_accuracy"] >= history[-1]["train_accuracy"]
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert len(lines) == 5 and json.loads(lines[-1])["epoch"] == 5
    assert (tmp_path / "log.csv").read_text().startswith("epoch,")
    assert learner.evaluate(loaders()[1])["accuracy"] == pytest.approx(history[-1]["valid_accuracy"])
    assert learner.predict(loaders()[1]).shape == (100, 3)


def test_resume_gives_the_same_final_parameters(tmp_path):
    full = make(tmp_path / "a")
    full.fit(*loaders(), epochs=4)
    part = make(tmp_path / "b")
    part.fit(*loaders(), epochs=2)
    again = make(tmp_path / "b")  # a fresh process: new model, optimizer, loaders
    ember.manual_seed(123)  # resuming restores the RNG state too
    again.fit(*loaders(), epochs=4, resume=True)
    assert [h["epoch"] for h in again.history] == [1, 2, 3, 4]
    for (k, a), (_, b) in zip(full.model.state_dict().items(), again.model.state_dict().items(), strict=True):
        assert np.array_equal(a.numpy(), b.numpy()), k


def test_early_stopping_stops():
    class Flat(Callback):
        def on_epoch_end(self, learner, epoch, logs):
            logs["valid_loss"] = 1.0  # never improves after the first epoch

    learner = make(callbacks=[Flat(), EarlyStopping("valid_loss", patience=2)])
    history = learner.fit(*loaders(), epochs=10)
    assert len(history) == 3


def test_nan_loss_stops_with_a_clear_error():
    ember.manual_seed(0)
    model = nn.Linear(2, 3)
    calls = []

    def loss_fn(out, target):  # finite for three batches, then NaN
        calls.append(1)
        return F.cross_entropy(out, target) * (float("nan") if len(calls) > 3 else 1.0)

    learner = Learner(model, SGD(model.parameters(), lr=0.1), loss_fn, progress=False)
    with pytest.raises(NonFiniteLossError, match=r"loss is nan at epoch 1, step 3 \(batch 3\)"):
        learner.fit(loaders()[0], epochs=3)
    skip = Learner(model, SGD(model.parameters(), lr=0.0), lambda o, t: o.sum() * float("nan"), progress=False,
                   skip_nonfinite=True)  # fmt: skip
    skip.fit(loaders()[0], epochs=1)


def test_grad_accumulation_and_clipping_run():
    learner = make(grad_accumulation=2, grad_clip_norm=1.0)
    history = learner.fit(*loaders(), epochs=3)
    assert history[-1]["valid_accuracy"] > 0.8
    assert learner.step == 3 * 7  # 13 batches per epoch -> 7 optimizer steps


def test_cli_trains_each_bundled_example(tmp_path, capsys):
    for ex in ("linear-regression", "digits-mlp", "digits-cnn"):
        rc = main(["train", ex, "--epochs", "1", "--limit", "64", "--out", str(tmp_path / ex), "--no-progress"])
        assert rc == 0, ex
        assert (tmp_path / ex / "log.jsonl").exists() and (tmp_path / ex / "checkpoints" / "checkpoints.json").exists()
    out = capsys.readouterr().out
    assert "digits-cnn: valid_loss" in out
    rc = main(["train", "digits-mlp", "--epochs", "2", "--limit", "64", "--out", str(tmp_path / "digits-mlp"),
               "--no-progress", "--resume"])  # fmt: skip
    assert rc == 0 and len((tmp_path / "digits-mlp" / "log.jsonl").read_text().splitlines()) == 2


def test_cli_errors_and_info(tmp_path, capsys):
    assert main(["train", "imagenet"]) == 2
    assert "unknown example 'imagenet'; choose from: linear-regression" in capsys.readouterr().err
    assert main(["train", "mnist-mlp", "--data-dir", str(tmp_path), "--epochs", "1"]) == 1
    err = capsys.readouterr().err
    assert "train-images-idx3-ubyte[.gz] is missing" in err
    assert "add --download" in err and "download=True" not in err  # the CLI's flag, not the Python argument
    assert main(["info"]) == 0
    assert f"ember {ember.__version__}" in capsys.readouterr().out
    assert main([]) == 0
    assert "ember train digits-cnn" in capsys.readouterr().out


def test_progress_in_a_file_or_pipe_is_one_plain_line_per_epoch(tmp_path, capsys):
    learner = make(tmp_path / "ck")
    learner.progress = True
    learner.fit(*loaders(), epochs=2)
    captured = capsys.readouterr()  # captured streams are not terminals, like a log file or a pipe
    assert "\r" not in captured.out + captured.err and captured.err == ""
    assert [ln.split(" | ")[0] for ln in captured.out.splitlines() if ln.startswith("epoch ")] == ["epoch 1", "epoch 2"]
    assert "nothing to resume" not in captured.out
    learner.fit(*loaders(), epochs=2, resume=True)
    rerun = capsys.readouterr().out
    assert "the checkpoint already has 2 of 2 epochs" in rerun
    assert "resumed from" not in rerun  # one message for a finished run, not "resumed" then "nothing to resume"
    learner.fit(*loaders(), epochs=3, resume=True)
    assert "resumed from epoch 2" in capsys.readouterr().out
