"""A rank that raises, is killed or hangs: the others stop with an error naming the operation, within the timeout.

Also ``ember.multiprocessing.spawn`` starting a group, and stopping the other ranks when one fails.
"""

from __future__ import annotations

import os
import time

import pytest

import ember
import ember.distributed as dist
import ember.multiprocessing as mp

from .conftest import free_port, run_group

pytestmark = pytest.mark.distributed


def _one_rank_fails(rank, world, how):
    x = ember.ones(4)
    dist.all_reduce(x)  # the group works
    if rank == 1:
        if how == "raise":
            raise ValueError("rank 1 fails on purpose")
        if how == "kill":
            os.kill(os.getpid(), 9)
        time.sleep(30)  # "hang": alive, but never calls the collective
        return None
    t0 = time.monotonic()
    with pytest.raises(dist.DistBackendError) as e:
        dist.all_reduce(x)
    return str(e.value), time.monotonic() - t0


@pytest.mark.parametrize("how", ["raise", "kill", "hang"])
def test_survivors_get_an_error_naming_the_operation(how):
    res = run_group(_one_rank_fails, how, collective_timeout=3.0, timeout=25.0, check=False, wait_for=[0])
    status, value = res[0]
    assert status == "ok", value
    msg, waited = value
    assert msg.startswith("all_reduce failed on rank 0 of 2: "), msg
    if how == "hang":
        assert "timed out" in msg.lower() or "timeout" in msg.lower(), msg
        assert waited < 20, waited
    else:
        assert waited < 10, waited  # a dead peer closes its sockets: no need to wait for the timeout


def _spawned(rank, port, world, fail):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=20)
    x = ember.tensor([float(rank)])
    dist.all_reduce(x)
    if fail and rank == 1:
        raise RuntimeError("spawned rank 1 fails")
    if fail:
        dist.all_reduce(x)  # waits for rank 1, which is gone: spawn stops this rank
    assert x.tolist() == [1.0]
    dist.destroy_process_group()


def test_multiprocessing_spawn_starts_a_group_and_stops_it_on_failure():
    pytest.importorskip("torch")
    mp.spawn(_spawned, args=(free_port(), 2, False), nprocs=2, start_method="fork")
    t0 = time.monotonic()
    with pytest.raises(mp.ProcessRaisedException, match="process 1 raised"):
        mp.spawn(_spawned, args=(free_port(), 2, True), nprocs=2, start_method="fork")
    assert time.monotonic() - t0 < 15
