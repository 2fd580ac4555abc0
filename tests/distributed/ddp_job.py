"""A Learner run for the torchrun tests: ``torchrun --nproc_per_node=2 ddp_job.py OUT EPOCHS [KILL_STEP]``.

With KILL_STEP, rank 1 kills itself (SIGKILL) at that step of epoch 2 in torchrun's first attempt; with
``--max-restarts=1`` the restarted ranks resume from the last checkpoint. Rank 0 saves the final state dict to
``OUT/final.mpk``. ``train`` also runs in the tests' forked groups, as the uninterrupted reference.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import numpy as np

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.data import DataLoader, TensorDataset
from ember.train import Callback, Learner


class _KillRank1(Callback):
    """Rank 1 kills itself after batch ``batch`` of epoch 2, in torchrun's first attempt."""

    def __init__(self, batch: int) -> None:
        self.batch, self.seen = batch, 0

    def on_epoch_start(self, learner, epoch):
        self.seen = 0

    def on_batch_end(self, learner, step, loss):
        self.seen += 1
        first_attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
        if learner.epoch == 2 and self.seen == self.batch and dist.get_rank() == 1 and first_attempt:
            os.kill(os.getpid(), signal.SIGKILL)


def train(out: str, epochs: int, kill_step: int | None = None) -> dict:
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT")
    if attempt is not None:  # what the test reads to know the run was restarted
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"attempt-{attempt}-rank-{dist.get_rank()}").touch()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 6)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0).astype(np.int64)
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    callbacks = [_KillRank1(kill_step)] if kill_step is not None else []
    learner = Learner(model, opt, F.cross_entropy, checkpoint_dir=out, callbacks=callbacks, progress=False, plot=False)
    learner.fit(DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True, seed=3), epochs=epochs, resume=True)
    if dist.get_rank() == 0:
        ember.save(model.state_dict(), Path(out) / "final.mpk")
    return {k: v.numpy() for k, v in model.state_dict().items()}


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=60)  # a worker left behind by a failed test does not linger
    try:
        train(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else None)
    finally:
        dist.destroy_process_group()
