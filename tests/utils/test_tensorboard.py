"""``ember.utils.tensorboard.SummaryWriter`` and the Learner's TensorBoard logger, read back by TensorBoard itself.

Event files are read with TensorBoard's ``EventAccumulator``; one test starts ``tensorboard --logdir`` on a local
port and asks its HTTP API for the scalar tags.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import ember
from ember.utils.tensorboard import SummaryWriter

rng = np.random.default_rng(0)


def read(log_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0, "histograms": 0, "images": 0, "tensors": 0})
    acc.Reload()
    return acc


def test_scalars_histograms_text_and_close(tmp_path):
    with SummaryWriter(tmp_path) as w:
        assert w.log_dir == str(tmp_path) == w.get_logdir()
        for step in range(4):
            w.add_scalar("loss/train", 1.0 / (step + 1), step)
        w.add_scalar("loss/train_t", ember.tensor(0.5), 7, walltime=123.0)
        w.add_scalar("new", np.float64(2.5), 1, new_style=True)
        values = rng.standard_normal(1000)
        w.add_histogram("weights", ember.tensor(values.astype(np.float32)), 3)
        w.add_histogram("numpy_bins", values, 3, bins=20, max_bins=7)
        w.add_text("notes", "**bold** text", 2)
    acc = read(tmp_path)
    loss = acc.Scalars("loss/train")
    assert [e.step for e in loss] == [0, 1, 2, 3]
    np.testing.assert_allclose([e.value for e in loss], [1, 1 / 2, 1 / 3, 1 / 4], rtol=1e-6)
    (t,) = acc.Scalars("loss/train_t")
    assert (t.step, t.value, t.wall_time) == (7, 0.5, 123.0)
    from tensorboard.util import tensor_util

    (new,) = acc.Tensors("new")
    assert tensor_util.make_ndarray(new.tensor_proto) == 2.5
    (h,) = acc.Histograms("weights")
    hv = h.histogram_value
    assert h.step == 3 and hv.num == 1000 and sum(hv.bucket) == 1000
    np.testing.assert_allclose([hv.min, hv.max, hv.sum], [values.min(), values.max(), values.sum()], rtol=1e-5)
    np.testing.assert_allclose(hv.sum_squares, (values.astype(np.float32).astype(np.float64) ** 2).sum(), rtol=1e-6)
    assert all(a < b for a, b in zip(hv.bucket_limit, hv.bucket_limit[1:]))
    counts, edges = np.histogram(values, bins=20)
    (h2,) = acc.Histograms("numpy_bins")
    assert len(h2.histogram_value.bucket) == 7 and sum(h2.histogram_value.bucket) == 1000
    assert h2.histogram_value.bucket_limit[-1] == pytest.approx(edges[-1])
    assert h2.histogram_value.bucket[0] == counts[:3].sum()  # 20 bins merged in runs of 3
    (text,) = acc.Tensors("notes/text_summary")
    assert tensor_util.make_ndarray(text.tensor_proto).ravel()[0] == b"**bold** text"
    with pytest.raises(RuntimeError, match="closed"):
        w.add_scalar("late", 1.0)
    w.close()  # a second close is fine


def test_images_figures_and_scalars_groups(tmp_path):
    from PIL import Image

    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chw = rng.random((3, 6, 5)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", ember.tensor(chw), 1)
        w.add_image("hw_uint8", np.arange(12, dtype=np.uint8).reshape(3, 4), 1, dataformats="HW")
        w.add_images("batch", rng.random((10, 1, 4, 4)), 2)
        fig = plt.figure(figsize=(2, 1), dpi=50)
        plt.plot([0, 1], [1, 0])
        w.add_figure("fig", fig, 3)
        w.add_scalars("acc", {"train": 0.8, "valid": 0.7}, 1)
        with pytest.raises(ValueError, match="dataformats 'CHW' needs 3 dimensions"):
            w.add_image("bad", np.zeros((2, 3, 4, 5)))
        with pytest.raises(ValueError, match="1, 3 or 4 channels; got 5"):
            w.add_image("bad", np.zeros((5, 3, 4)))
    acc = read(tmp_path)
    decoded = np.asarray(Image.open(io.BytesIO(acc.Images("chw")[0].encoded_image_string)))
    np.testing.assert_array_equal(decoded, (np.clip(chw, 0, 1) * 255 + 0.5).astype(np.uint8).transpose(1, 2, 0))
    gray = np.asarray(Image.open(io.BytesIO(acc.Images("hw_uint8")[0].encoded_image_string)))
    np.testing.assert_array_equal(gray, np.arange(12).reshape(3, 4))
    grid = acc.Images("batch")[0]
    assert (grid.height, grid.width) == (8, 32)  # 10 images, 8 a row: two rows of 4x4 tiles
    figure = acc.Images("fig")[0]
    assert (figure.height, figure.width) == (50, 100) and not plt.get_fignums()  # rendered, then closed
    assert read(tmp_path / "acc_train").Scalars("acc")[0].value == pytest.approx(0.8)
    assert read(tmp_path / "acc_valid").Scalars("acc")[0].value == pytest.approx(0.7)


def test_pr_curve_matches_a_direct_count(tmp_path):
    from tensorboard.util import tensor_util

    labels = rng.integers(0, 2, 200)
    predictions = rng.random(200)
    with SummaryWriter(tmp_path) as w:
        w.add_pr_curve("pr", ember.tensor(labels), ember.tensor(predictions), 0, num_thresholds=11)
        with pytest.raises(ValueError, match=r"predictions must lie in \[0, 1\]"):
            w.add_pr_curve("bad", labels, predictions + 1)
    data = tensor_util.make_ndarray(read(tmp_path).Tensors("pr")[0].tensor_proto)
    assert data.shape == (6, 11)
    for i in range(11):
        # threshold i / 10, bucketed as TensorBoard does: floor(p * (n - 1)) >= i
        pos = np.floor(predictions * 10) >= i
        tp, fp = (pos & (labels == 1)).sum(), (pos & (labels == 0)).sum()
        fn, tn = ((~pos) & (labels == 1)).sum(), ((~pos) & (labels == 0)).sum()
        np.testing.assert_allclose(data[:4, i], [tp, fp, tn, fn])
        np.testing.assert_allclose(data[4:, i], [tp / max(tp + fp, 1e-7), tp / max(tp + fn, 1e-7)], rtol=1e-6)


def test_hparams_are_read_by_the_hparams_plugin(tmp_path):
    from tensorboard.plugins.hparams import metadata

    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1, "optimizer": "adam", "bn": True}, {"hparam/accuracy": 0.9}, run_name="trial1",
                      hparam_domain_discrete={"optimizer": ["adam", "sgd"]})  # fmt: skip
        with pytest.raises(TypeError, match="hyperparameter 'bad' must be"):
            w.add_hparams({"bad": [1, 2]}, {})
    acc = read(tmp_path / "trial1")
    content = acc.PluginTagToContent("hparams")
    experiment = metadata.parse_experiment_plugin_data(content[metadata.EXPERIMENT_TAG])
    assert [h.name for h in experiment.hparam_infos] == ["lr", "optimizer", "bn"]
    assert [v.string_value for v in experiment.hparam_infos[1].domain_discrete.values] == ["adam", "sgd"]
    start = metadata.parse_session_start_info_plugin_data(content[metadata.SESSION_START_INFO_TAG])
    assert start.hparams["lr"].number_value == 0.1 and start.hparams["bn"].bool_value
    assert acc.Scalars("hparam/accuracy")[0].value == pytest.approx(0.9)


def test_purge_step_drops_the_tail_of_a_crashed_run(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(10):
            w.add_scalar("x", float(step), step)
    time.sleep(1.1)  # event files are named by the second they were opened in
    with SummaryWriter(tmp_path, purge_step=5) as w:
        for step in range(5, 8):
            w.add_scalar("x", 100.0 + step, step)
    events = read(tmp_path).Scalars("x")
    assert [(e.step, e.value) for e in events] == [(s, float(s)) for s in range(5)] + [
        (s, 100.0 + s) for s in (5, 6, 7)
    ]


def test_a_log_dir_that_cannot_be_written_is_refused_before_anything_is_written(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder")
    with pytest.raises(OSError, match=r"cannot write event files in log_dir .*file\.txt/logs"):
        SummaryWriter(blocker / "logs")
    if hasattr(os, "geteuid") and os.geteuid() != 0:  # root writes anywhere; a read-only folder stops the others
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(PermissionError, match="cannot write event files"):
            SummaryWriter(locked)
        assert list(locked.iterdir()) == []
    assert blocker.read_text() == "not a folder"


def test_learner_logs_metrics_lrs_grad_norms_and_histograms(tmp_path, capsys):
    import ember.nn as nn
    import ember.nn.functional as F
    from ember.data import DataLoader, TensorDataset
    from ember.optim import SGD
    from ember.train import Learner

    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = SGD([{"params": model[0].parameters()}, {"params": model[2].parameters(), "lr": 0.05}], lr=0.1)
    learner = Learner(model, opt, F.cross_entropy, out_dir=tmp_path, checkpoint_dir=tmp_path / "ck", progress=False,
                      loggers=["csv", "tensorboard"])  # fmt: skip
    train, valid = DataLoader(TensorDataset(x, y), 16, shuffle=True, seed=0), DataLoader(TensorDataset(x, y), 64)
    learner.fit(train, valid, epochs=2)
    acc = read(tmp_path)
    for tag in ("loss/train", "loss/valid", "accuracy/train", "accuracy/valid", "lr/group0", "lr/group1",
                "grad_norm/mean", "grad_norm/max", "epoch_time"):  # fmt: skip
        assert [e.step for e in acc.Scalars(tag)] == [1, 2], tag
    assert [e.value for e in acc.Scalars("loss/valid")] == pytest.approx([h["valid_loss"] for h in learner.history])
    assert acc.Scalars("lr/group1")[0].value == pytest.approx(0.05)
    norms = acc.Scalars("grad_norm/mean")
    assert all(0 < e.value < np.inf for e in norms)
    assert acc.Scalars("grad_norm/max")[0].value >= norms[0].value
    hist = acc.Histograms("weights/0.weight")
    assert [h.step for h in hist] == [1, 2] and hist[-1].histogram_value.num == 32
    np.testing.assert_allclose(hist[-1].histogram_value.sum, float(model[0].weight.sum().item()), rtol=1e-5)
    assert (tmp_path / "log.csv").exists()
    # a resumed run continues the same curves; the steps after the checkpoint are purged and rewritten
    learner2 = Learner(model, opt, F.cross_entropy, out_dir=tmp_path, checkpoint_dir=tmp_path / "ck", progress=False,
                       loggers=["tensorboard"])  # fmt: skip
    time.sleep(1.1)
    learner2.fit(train, valid, epochs=3, resume=True)
    assert [e.step for e in read(tmp_path).Scalars("loss/train")] == [1, 2, 3]


def test_learner_and_cli_logger_options(tmp_path, capsys):
    import ember.nn as nn
    import ember.nn.functional as F
    from ember.cli import main
    from ember.optim import SGD
    from ember.train import Learner

    model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="unknown logger 'wandb'"):
        Learner(model, SGD(model.parameters(), lr=0.1), F.cross_entropy, out_dir=tmp_path, loggers=["wandb"])
    with pytest.raises(ValueError, match="'tensorboard' logger needs out_dir"):
        Learner(model, SGD(model.parameters(), lr=0.1), F.cross_entropy, loggers=["tensorboard"])
    rc = main(["train", "linear-regression", "--epochs", "2", "--limit", "40", "--out", str(tmp_path / "cli"),
               "--no-progress", "--tensorboard"])  # fmt: skip
    assert rc == 0
    assert [e.step for e in read(tmp_path / "cli").Scalars("loss/valid")] == [1, 2]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_tensorboard_serves_the_event_files(tmp_path):
    run = tmp_path / "logs" / "run1"
    with SummaryWriter(run) as w:
        for step in range(3):
            w.add_scalar("loss/train", 1.0 / (step + 1), step)
    port = _free_port()
    cmd = [sys.executable, "-m", "tensorboard.main", "--logdir", str(tmp_path / "logs"), "--host", "127.0.0.1",
           "--port", str(port), "--load_fast", "false", "--reload_interval", "1"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        tags, deadline = {}, time.monotonic() + 90
        while "run1" not in tags and time.monotonic() < deadline:
            assert proc.poll() is None, f"tensorboard exited: {proc.stderr.read()[-2000:] if proc.stderr else ''}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/plugin/scalars/tags", timeout=5) as r:
                    tags = json.loads(r.read())
            except OSError:
                time.sleep(0.5)
        assert "loss/train" in tags.get("run1", {}), tags
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
