"""``Learner(compile=True)`` and ``ember train --compile``: the same training, bit for bit, as the eager loop."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.cli import main
from ember.data import DataLoader, TensorDataset
from ember.optim import SGD, Adam
from ember.train import Learner


def _loaders() -> tuple[DataLoader, DataLoader]:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 70)
    x = (np.eye(3, 4)[y] * 2 + 0.5 * rng.standard_normal((70, 4))).astype(np.float32)
    ds = TensorDataset(x, y)
    return DataLoader(ds, 16, shuffle=True, seed=0), DataLoader(ds, 32)


def _run(compile: bool, **kw: Any) -> tuple[Learner, list[dict[str, float]]]:
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 3))
    opt = kw.pop("opt", Adam)(model.parameters(), lr=0.02)
    sched = ember.optim.lr_scheduler.StepLR(opt, 2, 0.5)
    learner = Learner(model, opt, F.cross_entropy, scheduler=sched, scheduler_interval="batch", progress=False,
                      plot=False, compile=compile, **kw)  # fmt: skip
    return learner, learner.fit(*_loaders(), epochs=3)


@pytest.mark.parametrize("kw", [{}, {"grad_accumulation": 2, "grad_clip_norm": 0.5, "opt": SGD},
                                {"precision": "16-mixed", "grad_clip_norm": 0.5}])  # fmt: skip
def test_compiled_learner_trains_exactly_as_the_eager_one(kw: dict[str, Any]) -> None:
    eager, h1 = _run(False, **dict(kw))
    compiled, h2 = _run(True, **dict(kw))
    drop = lambda h: [{k: v for k, v in e.items() if k != "epoch_time"} for e in h]
    assert drop(h1) == drop(h2)
    for (k, a), (_, b) in zip(eager.model.state_dict().items(), compiled.model.state_dict().items(), strict=True):
        assert a.numpy().tobytes() == b.numpy().tobytes(), k
    train_step = compiled._steps[0]  # type: ignore[index]
    assert not train_step.eager and train_step.stats["replays"] > 0


def test_compiled_learner_skips_a_non_finite_batch_like_the_eager_one() -> None:
    def loss(out: Any, y: Any) -> Any:
        bad = (y == 2).all()  # a batch of only class 2 gives NaN
        return F.cross_entropy(out, y) + ember.where(bad, ember.tensor(float("nan")), ember.tensor(0.0))

    rng = np.random.default_rng(1)
    ys = np.concatenate([rng.integers(0, 3, 32), np.full(8, 2), rng.integers(0, 3, 24)])
    ds = TensorDataset(rng.standard_normal((64, 4)).astype(np.float32), ys)
    results = []
    for compile in (False, True):
        ember.manual_seed(0)
        model = nn.Linear(4, 3)
        learner = Learner(model, SGD(model.parameters(), lr=0.1), loss, skip_nonfinite=True, progress=False,
                          plot=False, compile=compile)  # fmt: skip
        learner.fit(DataLoader(ds, 8), epochs=2)
        results.append(model.weight.detach().numpy().tobytes())
    assert results[0] == results[1]


def test_a_skipped_batch_updates_batch_norm_statistics_once() -> None:
    # the non-finite check is a guard whose front part runs the forward, batch norm included: its running
    # statistics (updated in place by torch's batch-norm operator) are put back when the guard fails, so the eager
    # run of that batch updates them once, as without compile (they were updated twice, on the torch backend)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((24, 4)).astype(np.float32)
    y = rng.standard_normal((24, 1)).astype(np.float32)
    y[16:20] = 1e30  # an infinite loss from finite inputs: the statistics stay finite
    results = []
    for compile in (False, True):
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
        learner = Learner(model, SGD(model.parameters(), lr=0.01), F.mse_loss, skip_nonfinite=True, progress=False,
                          plot=False, compile=compile)  # fmt: skip
        with np.errstate(over="ignore"):
            learner.fit(DataLoader(TensorDataset(x, y), 4))
        results.append({k: v.numpy().tobytes() for k, v in model.state_dict().items()})
        if compile:
            assert learner._steps[0].stats["replays"] >= 3 and learner._steps[0].stats["eager"] == 0
    assert results[0] == results[1]


def test_cli_train_compile(tmp_path: Any) -> None:
    rc = main(["train", "linear-regression", "--epochs", "2", "--limit", "40", "--out", str(tmp_path),
               "--no-progress", "--compile"])  # fmt: skip
    assert rc == 0
    assert len((tmp_path / "log.jsonl").read_text().splitlines()) == 2
