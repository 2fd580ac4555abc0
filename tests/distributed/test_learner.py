"""The Learner in a process group: DDP, sharded loaders, global metrics, rank-0 output, resume across world sizes."""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.data import DataLoader, TensorDataset
from ember.record import Checkpointer
from ember.train import Learner

from .conftest import run_group

pytestmark = pytest.mark.distributed


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((88, 6)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0).astype(np.int64)
    return TensorDataset(x[:60], y[:60]), TensorDataset(x[60:], y[60:])


def _learner(tmp):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    learner = Learner(
        model,
        opt,
        F.cross_entropy,
        metrics=["loss", "accuracy"],
        checkpoint_dir=tmp / "ck",
        out_dir=tmp / "out",
        plot=False,
    )
    return learner, model


def _params(model):
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


def _fit(tmp, epochs, resume):
    learner, model = _learner(tmp)
    train, valid = _data()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        if resume:  # fit twice on one Learner: the second reuses the first's DDP wrapper
            learner.fit(DataLoader(train, batch_size=6), epochs=0, resume=True)
        hist = learner.fit(
            DataLoader(train, batch_size=6, shuffle=True, seed=1),
            DataLoader(valid, batch_size=8),
            epochs=epochs,
            resume=resume,
        )
    hist = [{k: v for k, v in h.items() if k != "epoch_time"} for h in hist]
    return {"history": hist, "printed": buf.getvalue(), "params": _params(model), "main": learner.is_main_process}


def _compiled_vs_eager(accumulate):
    """One epoch of a Learner with ``compile=True`` and one without, in this group: their histories, weights
    and the compiled steps' stats."""
    out = []
    for compile in (False, True):
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
        opt = ember.optim.Adam(model.parameters(), lr=0.01)
        learner = Learner(model, opt, F.cross_entropy, metrics=["loss", "accuracy"], compile=compile, plot=False,
                          grad_accumulation=accumulate, progress=False)  # fmt: skip
        train, valid = _data()
        with contextlib.redirect_stdout(io.StringIO()):
            hist = learner.fit(DataLoader(train, batch_size=6, shuffle=True, seed=1), DataLoader(valid, batch_size=8))
        stats = dict(learner._steps[0].stats) if compile else None
        out.append(([{k: v for k, v in h.items() if k != "epoch_time"} for h in hist], _params(model), stats))
    return out


def _in_group(rank, world, tmp):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = [_compiled_vs_eager(1), _compiled_vs_eager(2)]
    first = _fit(tmp, 1, resume=False)
    second = _fit(tmp, 2, resume=True)  # a new Learner: every rank resumes from rank 0's checkpoint
    return first, second, (compiled, [str(w.message) for w in caught])


def test_learner_trains_distributed_and_resumes_with_another_world_size(tmp_path):
    (a0, b0, c0), (a1, b1, c1) = run_group(_in_group, tmp_path)
    # compile=True trains in the group as the eager Learner does, bit for bit (gradient accumulation too)
    for compiled, caught in (c0, c1):
        assert caught == []
        for least, ((eager_hist, eager_params, _), (hist, params, stats)) in zip((4, 1), compiled, strict=True):
            assert hist == eager_hist
            for k in eager_params:
                assert params[k].tobytes() == eager_params[k].tobytes(), k
            assert stats["replays"] >= least and stats["eager"] == 0, stats  # (5 batches; 3 programs with no_sync)
    # every rank logs the global figures; only rank 0 prints
    assert a0["history"] == a1["history"] and b0["history"] == b1["history"]
    assert "epoch 1 |" in a0["printed"] and a1["printed"] == "" and b1["printed"] == ""
    assert "resumed from epoch 1" in b0["printed"] and a0["main"] and not a1["main"]
    assert b0["history"][0] == a0["history"][0] and len(b0["history"]) == 2
    for k in a0["params"]:  # the replicas stay identical
        np.testing.assert_array_equal(a0["params"][k], a1["params"][k])
        np.testing.assert_array_equal(b0["params"][k], b1["params"][k])
    # the checkpoint is a plain model's: it loads into a model outside any group, and evaluating the whole
    # validation set in one process gives the global figures the ranks logged
    learner, model = _learner(tmp_path / "single")
    Checkpointer(tmp_path / "ck").load_latest(model, learner.optimizer)
    for k, v in _params(model).items():
        np.testing.assert_array_equal(v, b0["params"][k])
    _, valid = _data()
    logs = learner.evaluate(DataLoader(valid, batch_size=8))
    assert logs["loss"] == pytest.approx(b0["history"][-1]["valid_loss"], rel=1e-6)
    assert logs["accuracy"] == pytest.approx(b0["history"][-1]["valid_accuracy"], rel=1e-12)
    # a different world size: one process resumes the 2-rank run
    one = _fit(tmp_path, 3, resume=True)
    assert one["history"][:2] == b0["history"] and len(one["history"]) == 3
    files = sorted(p.name for p in (tmp_path / "ck").iterdir())
    assert files == ["checkpoint-00002.mpk", "checkpoint-00003.mpk", "checkpoints.json"]


def test_a_single_process_checkpoint_resumes_in_a_group(tmp_path):
    one = _fit(tmp_path, 1, resume=False)  # one process, no group: a plain checkpoint
    res = run_group(lambda rank, world: (_fit(tmp_path, 1, resume=True), _fit(tmp_path, 2, resume=True)))
    (done0, r0), (done1, r1) = res
    for k in one["params"]:  # every rank loaded the single process's weights (nothing left to train)
        np.testing.assert_array_equal(done0["params"][k], one["params"][k])
        np.testing.assert_array_equal(done1["params"][k], one["params"][k])
    assert "resumed from epoch 1" in r0["printed"] and r1["printed"] == ""
    assert r0["history"] == r1["history"] and r0["history"][0] == one["history"][0] and len(r0["history"]) == 2
    for k in one["params"]:  # then trained one more epoch together, the replicas identical
        np.testing.assert_array_equal(r0["params"][k], r1["params"][k])
        assert not np.array_equal(r0["params"][k], one["params"][k])
