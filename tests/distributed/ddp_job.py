"""``examples/ddp_digits.py`` with one fault, for the torchrun test: ``ddp_job.py KILL_BATCH EXAMPLE_ARGS...``.

Every start of a worker process leaves a file ``starts/rank-R-restart-C-pid-P`` in the example's ``--out``
directory (C: the node's ``TORCHELASTIC_RESTART_COUNT``). After batch KILL_BATCH of epoch 2, once (a marker
file says it was done), rank 1 kills itself (SIGKILL) and the other ranks sleep: their agents see the failed
node join a new rendezvous round while their own workers look healthy, and restart them without counting a
restart, so the nodes' restart counts differ (a per-node count cannot name the attempt). With
``--max-restarts=1`` and ``--resume`` the restarted group continues from the last checkpoint.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import time
from pathlib import Path

import ember.distributed as dist
from ember.train import Callback

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ddp_digits.py"


def load_example():
    """The example as a module (it is a script, not part of a package)."""
    spec = importlib.util.spec_from_file_location("ddp_digits", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Fault(Callback):
    def __init__(self, out: Path, batch: int) -> None:
        self.out, self.batch, self.seen = out, batch, 0

    def on_epoch_start(self, learner, epoch):
        self.seen = 0

    def on_batch_end(self, learner, step, loss):
        self.seen += 1
        if learner.epoch != 2 or self.seen != self.batch:
            return
        marker = self.out / ("killed" if dist.get_rank() == 1 else f"slept-{dist.get_rank()}")
        if marker.exists():
            return
        marker.touch()
        if dist.get_rank() == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)  # busy while rank 1 dies: the agent restarts this worker for the new round, uncounted


if __name__ == "__main__":
    kill_batch, argv = int(sys.argv[1]), sys.argv[2:]
    out = Path(argv[argv.index("--out") + 1])
    (out / "starts").mkdir(parents=True, exist_ok=True)
    (
        out
        / "starts"
        / f"rank-{os.environ['RANK']}-restart-{os.environ['TORCHELASTIC_RESTART_COUNT']}-pid-{os.getpid()}"
    ).touch()  # before the group: every start
    load_example().main(argv, callbacks=[_Fault(out, kill_batch)])
