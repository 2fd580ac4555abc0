"""A rank that raises, is killed or hangs: the others stop with an error naming the operation, within the timeout.

Also ``ember.multiprocessing.spawn`` starting a group, and stopping the other ranks when one fails.
"""

from __future__ import annotations

import faulthandler
import os
import time

import pytest

import ember
import ember.distributed as dist
import ember.multiprocessing as mp

from .conftest import free_port, on_the_cpu, run_group

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
    on_the_cpu()  # forked: it must not touch CUDA (conftest's module doc)
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


# -- calls that differ across ranks (see ember/distributed/_check.py for the three modes) --------------------------
def _counting_checks():
    """Count the cross-rank check exchanges (the only all_gather_single calls in these tests)."""
    import torch.distributed as tdist

    counts = [0]
    name = "all_gather_single" if hasattr(tdist, "all_gather_single") else "all_gather_into_tensor"  # torch < 2.13
    real = getattr(tdist, name)

    def counting(*args, **kwargs):
        counts[0] += 1
        return real(*args, **kwargs)

    setattr(tdist, name, counting)
    return counts


def _pattern(rank, world):
    checks, out = _counting_checks(), {}
    x, y = ember.ones(2), ember.ones(3)
    for _ in range(5):
        dist.all_reduce(x)
    out["repeat"] = (checks[0], x.tolist())  # the first two calls are checked, then the prediction holds
    for _ in range(3):  # two calls in turn: each is checked until the history has seen it follow the other
        dist.all_reduce(x)
        dist.broadcast(y, src=0)
    out["alternate"] = checks[0]
    for _ in range(2):  # a new shape on every rank: checked (twice: it follows a broadcast, then itself)
        dist.all_reduce(y)
    out["new_shape"] = (checks[0], y.tolist())
    t0 = time.monotonic()
    # rank 1 changes its call while rank 0 repeats its own: both wait for the group's timeout, nobody crashes
    with pytest.raises(dist.DistBackendError) as e:
        dist.all_reduce(y if rank == 0 else ember.ones(4))
    out["changed"] = (str(e.value), time.monotonic() - t0)
    with pytest.raises(dist.DistUsageError) as e:  # the ranks are out of step: checked calls are refused
        dist.all_reduce(x)
    out["after"] = str(e.value)
    return out


def test_a_repeated_call_is_not_checked_again_and_a_changed_one_ends_in_errors():
    res = run_group(_pattern, collective_timeout=2.0, timeout=40.0)
    for r in res:
        assert r["repeat"] == (2, [32.0, 32.0])
        assert r["alternate"] == 4
        assert r["new_shape"] == (6, [4.0, 4.0, 4.0])
        assert "out of step" in r["after"] and "destroy" in r["after"]
    msg0, waited0 = res[0]["changed"]
    msg1, waited1 = res[1]["changed"]
    assert msg0.startswith("all_reduce failed on rank 0 of 2: "), msg0
    assert "was not checked across ranks" in msg0, msg0
    assert msg1.startswith("all_reduce failed on rank 1 of 2: "), msg1
    assert (
        "this rank called all_reduce(float32[4], op=SUM) where the group's earlier calls predicted "
        "all_reduce(float32[3], op=SUM)" in msg1
    ), msg1
    assert 1.5 < waited0 < 20 and 1.5 < waited1 < 20, (waited0, waited1)  # the timeout, not a hang


def _every_call(rank, world):
    dist.set_collective_checks("all")
    checks, x = _counting_checks(), ember.ones(3)
    for _ in range(3):
        dist.all_reduce(x)
    n = checks[0]
    t0 = time.monotonic()
    with pytest.raises(dist.DistUsageError) as e:
        dist.all_reduce(x if rank == 0 else ember.ones(4))
    return n, str(e.value), time.monotonic() - t0


def test_checking_every_call_reports_a_changed_call_at_once():
    for n, msg, waited in run_group(_every_call, collective_timeout=20.0):
        assert n == 3
        assert "rank 0: all_reduce(float32[3], op=SUM); rank 1: all_reduce(float32[4], op=SUM)" in msg
        assert waited < 10


def _unchecked(rank, world):
    dist.set_collective_checks(False)
    if rank == 0:  # keep gloo's abort message and the fault handler's dump out of the test log
        faulthandler.disable()
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    dist.all_reduce(ember.ones(3 if rank == 0 else 1000))


def test_without_checks_gloo_kills_a_rank():
    """Why the checks exist: unchecked, a size mismatch is a SIGABRT in gloo's receive (torch 2.13)."""
    res = run_group(_unchecked, collective_timeout=10.0, timeout=30.0, check=False)
    assert res[0] == ("exit", -6), res[0]  # the rank with the smaller buffer receives too many bytes
    assert res[1][0] == "error" and "all_reduce failed on rank 1 of 2" in res[1][1], res[1]
