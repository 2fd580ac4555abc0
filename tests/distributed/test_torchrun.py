"""torchrun, unchanged: the example end to end on two "nodes" of this machine, with a killed worker restarted.

One torchrun run (two agents, each starting its worker twice: 6 processes importing torch and Ember) checks
the example, the multi-node rendezvous, the restart and the resume at once, to keep the suite short.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember.distributed
from ember.record import Checkpointer

from .conftest import free_port, run_group
from .ddp_job import load_example

pytestmark = pytest.mark.distributed

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).with_name("ddp_job.py")
EXAMPLE_ARGS = ["--epochs", "3", "--limit", "128", "--device", "cpu"]  # 2 batches of 32 per rank and epoch; gloo
# (the two "nodes" share this machine: with one GPU, NCCL would refuse them, and the forked ranks stay on the CPU)


def _torchrun(*args):
    """torchrun in a session of its own, so that a timeout can stop the agent and its workers together."""
    pytest.importorskip("torch")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    env["OMP_NUM_THREADS"] = "1"  # as the forked reference ranks (torchrun sets it only for nproc_per_node > 1)
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


def _example_in_a_forked_group(rank, world, port, out):
    """The uninterrupted reference: the example's ``main`` on 2 forked ranks, ``env://`` as torchrun sets it."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    return load_example().main([*EXAMPLE_ARGS, "--out", str(out)])["history"]


def _final_weights(out):
    model = load_example().make_model()
    info = Checkpointer(out).load_latest(model)
    assert info is not None and info["epoch"] == 3, info
    return {k: v.numpy() for k, v in model.state_dict().items()}


def test_the_example_on_two_nodes_survives_a_killed_worker_and_ends_as_an_uninterrupted_run(tmp_path):
    """``examples/ddp_digits.py`` as two torchrun "nodes" at a c10d endpoint, ``--max-restarts=1``: rank 1 is
    SIGKILLed mid-epoch 2 (``ddp_job.py``); both nodes restart their workers, which resume from rank 0's last
    checkpoint and finish with the weights of a run nobody interrupted (deterministic data order; bit for bit)."""
    port = free_port()
    out = tmp_path / "killed"
    args = [
        "--nnodes=2",
        "--nproc_per_node=1",
        "--max-restarts=1",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint=127.0.0.1:{port}",
        "--rdzv-id=two-nodes",
        JOB,
        1,  # rank 1 dies after the first batch of epoch 2
        *EXAMPLE_ARGS,
        "--timeout",
        60,
        "--resume",
        "--out",
        out,
    ]
    procs = [_torchrun(*args), _torchrun(*args)]
    results = [_finish(p) for p in procs]
    for rc, log in results:
        assert rc == 0, log[-3000:]
    both = "\n".join(log for _, log in results)
    assert (out / "killed").exists(), both[-3000:]
    # Every worker started twice. Rank 0 was asleep when rank 1 died: its agent restarted it for the new
    # rendezvous round without counting a restart, so the nodes' TORCHELASTIC_RESTART_COUNTs differ (0 and 1);
    # a store prefix made of that count split the restarted ranks (each waited for the other until the timeout).
    starts = sorted(p.name.rsplit("-pid-")[0] for p in (out / "starts").iterdir())
    assert starts == ["rank-0-restart-0", "rank-0-restart-0", "rank-1-restart-0", "rank-1-restart-1"], both[-3000:]
    printed = [log for _, log in results if "epoch 1 |" in log]
    assert len(printed) == 1  # printed by the node that holds rank 0 only
    lines = [ln.split(" | ")[0] for ln in printed[0].splitlines() if ln.startswith("epoch ")]
    assert lines == ["epoch 1", "epoch 2", "epoch 3"], printed[0][-3000:]  # epoch 2 again after the restart
    assert (out / "log.csv").exists()
    run_group(_example_in_a_forked_group, free_port(), tmp_path / "straight", init=False, timeout=120)
    want, got = _final_weights(tmp_path / "straight"), _final_weights(out)
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def test_the_ranks_of_a_restart_agree_on_fresh_keys_whatever_a_failed_attempt_left_in_the_store():
    """The handshake behind the per-start prefix (``_elastic.py``), in threads on one store: stale hellos,
    answers and counters of a failed attempt do not make a rank of the new one pick an old number."""
    torch = pytest.importorskip("torch")
    import concurrent.futures
    import datetime

    from ember.distributed import _elastic

    store = torch.distributed.TCPStore("127.0.0.1", 0, 1, True, timeout=datetime.timedelta(seconds=10))
    store.add(_elastic.GENERATION, 4)  # four earlier starts
    store.append(_elastic.HELLOS, "dead1,dead2,")  # ranks that died waiting, and one answered
    store.set(_elastic.ANSWER + "dead2", "4")
    store.add(f"{_elastic.ACKS}4", 1)

    def rank(r):  # a client of its own per rank, as in separate processes
        client = torch.distributed.TCPStore("127.0.0.1", store.port, 3, False, timeout=datetime.timedelta(seconds=10))
        return _elastic._agree(client, r, 3, 10.0)

    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        got = list(pool.map(rank, [2, 0, 1]))
    assert got == [5, 5, 5]
    with pytest.raises(ember.distributed.DistBackendError, match=r"only 0 of the other 2 ranks joined within 0.2 s"):
        _elastic._agree(store, 0, 3, 0.2)  # the others never come
