"""torchrun, unchanged: the example end to end, two "nodes" on this machine, and a killed worker restarted.

Each test starts real torchrun processes (its agent and the workers import torch and Ember: a few seconds).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember

from .conftest import free_port, run_group

pytestmark = pytest.mark.distributed

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).with_name("ddp_job.py")


def _torchrun(*args):
    """torchrun in a session of its own, so that a timeout can stop the agent and its workers together."""
    pytest.importorskip("torch")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "torch.distributed.run", *map(str, args)]
    return subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)  # fmt: skip


def _finish(proc, timeout=400):
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the agent and every worker it started
        out, _ = proc.communicate()
        pytest.fail(f"torchrun did not finish within {timeout} s:\n{out[-3000:]}")
    return proc.returncode, out


def test_the_example_on_two_nodes_of_this_machine(tmp_path):
    """``examples/ddp_digits.py`` end to end, 2 ranks, as two torchrun "nodes" meeting at a c10d endpoint."""
    pytest.importorskip("sklearn")
    port = free_port()
    args = [
        "--nnodes=2",
        "--nproc_per_node=1",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint=127.0.0.1:{port}",
        "--rdzv-id=two-nodes",
        ROOT / "examples" / "ddp_digits.py",
        "--epochs",
        "2",
        "--limit",
        "128",
        "--out",
        tmp_path,
    ]
    procs = [_torchrun(*args), _torchrun(*args)]
    results = [_finish(p) for p in procs]
    for rc, out in results:
        assert rc == 0, out[-3000:]
    printed = [out for _, out in results if "epoch 1 |" in out]
    assert len(printed) == 1  # printed once, by the node that holds rank 0
    lines = [ln.split(" | ")[0] for ln in printed[0].splitlines() if ln.startswith("epoch ")]
    assert lines == ["epoch 1", "epoch 2"]
    assert (tmp_path / "log.csv").exists() and (tmp_path / "checkpoint-00002.mpk").exists()


def test_a_killed_worker_is_restarted_and_the_run_ends_as_an_uninterrupted_one(tmp_path):
    pytest.importorskip("torch")
    port = free_port()
    proc = _torchrun(
        "--nnodes=1",
        "--nproc_per_node=2",
        "--max-restarts=1",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint=127.0.0.1:{port}",
        JOB,
        tmp_path / "killed",
        3,
        5,
    )
    rc, out = _finish(proc)
    assert rc == 0, out[-3000:]
    attempts = sorted(p.name for p in (tmp_path / "killed").glob("attempt-*"))
    assert attempts == ["attempt-0-rank-0", "attempt-0-rank-1", "attempt-1-rank-0", "attempt-1-rank-1"], out
    job = {}
    exec(compile(JOB.read_text(), str(JOB), "exec"), job)
    want = run_group(lambda rank, world: job["train"](str(tmp_path / "straight"), 3), timeout=120)[0]
    got = ember.load(tmp_path / "killed" / "final.mpk")
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_array_equal(got[k].numpy(), want[k], err_msg=k)
