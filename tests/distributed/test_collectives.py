"""Every collective against torch.distributed's result on the same inputs (2 gloo ranks, this test's backend).

One group runs all the checks (``_collectives``); a second one checks the cross-rank errors. Also: zero-copy
hand-over (the torch tensor given to torch.distributed is the Ember tensor's memory), version bumps of
in-place collectives, and the errors that need no group.
"""

from __future__ import annotations

import datetime
import types

import numpy as np
import pytest

import ember
import ember.distributed as dist

from .conftest import run_group

pytestmark = pytest.mark.distributed


def _address(t):
    """The address of an Ember tensor's first element, whatever its backend."""
    a = t._data
    return a.data_ptr() if hasattr(a, "data_ptr") else a.__array_interface__["data"][0]


def _same(e, t):
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def _torch_gather_single(tdist):
    """PyTorch's reference: ``all_gather_single`` in torch 2.13, ``all_gather_into_tensor`` before (2.11)."""
    return getattr(tdist, "all_gather_single", None) or tdist.all_gather_into_tensor


def _torch_scatter_single(tdist):
    """``reduce_scatter_single`` in torch 2.13, ``reduce_scatter_tensor`` before."""
    return getattr(tdist, "reduce_scatter_single", None) or tdist.reduce_scatter_tensor


def _collectives(rank, world):
    import torch
    import torch.distributed as tdist

    from ember.distributed._interop import borrow

    out = {}
    base = np.arange(6, dtype=np.float64).reshape(2, 3) * (rank + 1) + rank

    # zero-copy: what torch.distributed gets is the Ember tensor's own memory
    x = ember.tensor(base)
    assert borrow(x, "t").torch.data_ptr() == _address(x)
    # all_reduce, every reduction, against torch's
    for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
        x = ember.tensor(base)
        v = x._vc[0]
        ref = torch.tensor(base)
        assert dist.all_reduce(x, op=getattr(dist.ReduceOp, op)) is None
        tdist.all_reduce(ref, op=getattr(tdist.ReduceOp, op))
        _same(x, ref)
        assert x._vc[0] == v + 1, "an in-place collective bumps the version"
    x = ember.tensor(base.astype(np.int64))
    dist.all_reduce(x, op=tdist.ReduceOp.MAX)  # torch's ReduceOp is accepted too
    assert x.dtype == ember.int64 and x.tolist() == (np.arange(6).reshape(2, 3) * 2 + 1).tolist()
    # a strided view: copied for the transport, the result written back through the view
    y = ember.tensor(base.T.copy()).t()
    dist.all_reduce(y)
    np.testing.assert_array_equal(y.numpy(), base * 0 + (np.arange(6).reshape(2, 3) * 3 + 1))
    # a view shares its base's version counter
    big = ember.zeros(4, 3, dtype=ember.float64)
    v = big._vc[0]
    part = big[1:3]
    part.copy_(ember.tensor(base))
    dist.all_reduce(part)
    assert big._vc[0] > v + 1 and big[1:3].tolist() == part.tolist() and big[0].tolist() == [0.0] * 3
    # broadcast / reduce
    x, ref = ember.tensor(base), torch.tensor(base)
    dist.broadcast(x, src=1)
    tdist.broadcast(ref, src=1)
    _same(x, ref)
    x, ref = ember.tensor(base), torch.tensor(base)
    dist.reduce(x, dst=0, op=dist.ReduceOp.SUM)
    tdist.reduce(ref, dst=0)
    if rank == 0:
        _same(x, ref)
    # all_gather, all_gather_into_tensor, reduce_scatter_tensor
    got = [ember.zeros(2, 3, dtype=ember.float64) for _ in range(world)]
    dist.all_gather(got, ember.tensor(base))
    ref_l = [torch.zeros(2, 3, dtype=torch.float64) for _ in range(world)]
    tdist.all_gather(ref_l, torch.tensor(base))
    for g, r in zip(got, ref_l, strict=True):
        _same(g, r)
    o, ro = ember.zeros(world * 2, 3, dtype=ember.float64), torch.zeros(world * 2, 3, dtype=torch.float64)
    dist.all_gather_into_tensor(o, ember.tensor(base))
    _torch_gather_single(tdist)(ro, torch.tensor(base))
    _same(o, ro)
    big_in = np.arange(4 * world, dtype=np.float32) * (rank + 2)
    o, ro = ember.zeros(4, dtype=ember.float32), torch.zeros(4)
    dist.reduce_scatter_tensor(o, ember.tensor(big_in), op=dist.ReduceOp.MAX)
    _torch_scatter_single(tdist)(ro, torch.tensor(big_in), op=tdist.ReduceOp.MAX)
    _same(o, ro)
    # gather / scatter
    gl = [ember.zeros(2, 3, dtype=ember.float64) for _ in range(world)] if rank == 0 else None
    rl = [torch.zeros(2, 3, dtype=torch.float64) for _ in range(world)] if rank == 0 else None
    dist.gather(ember.tensor(base), gl, dst=0)
    tdist.gather(torch.tensor(base), rl, dst=0)
    if rank == 0:
        for g, r in zip(gl, rl, strict=True):
            _same(g, r)
    chunks = [np.full(3, 10.0 * i + 1) for i in range(world)]
    sl = [ember.tensor(c) for c in chunks] if rank == 1 else None
    x, ref = ember.zeros(3, dtype=ember.float64), torch.zeros(3, dtype=torch.float64)
    dist.scatter(x, sl, src=1)
    tdist.scatter(ref, [torch.tensor(c) for c in chunks] if rank == 1 else None, src=1)
    _same(x, ref)
    # point to point
    if rank == 0:
        dist.send(ember.tensor([1.5, 2.5]), dst=1)
        x = ember.zeros(2)
        assert dist.recv(x) == 1 and x.tolist() == [7.0, 8.0]
    else:
        x = ember.zeros(2)
        assert dist.recv(x, src=0) == 0 and x.tolist() == [1.5, 2.5]
        dist.send(ember.tensor([7.0, 8.0]), dst=0)
    # async: the work handle finishes the call; values are in place after wait()
    x = ember.tensor(base)
    work = dist.all_reduce(x, async_op=True)
    assert isinstance(work, dist.Work) and work.wait() and work.is_completed()
    np.testing.assert_array_equal(x.numpy(), np.arange(6).reshape(2, 3) * 3 + 1)
    xs = ember.tensor(base).t()  # copied for transport: the copy lands at wait()
    w2 = dist.all_reduce(xs, async_op=True)
    w2.wait()
    np.testing.assert_array_equal(xs.numpy(), (np.arange(6).reshape(2, 3) * 3 + 1).T)
    # objects, barrier, groups
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "t": ember.tensor([rank])})
    assert [o["rank"] for o in objs] == [0, 1] and objs[1]["t"].tolist() == [1]
    lst = [rank, "x"] if rank == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst == [0, "x"]
    dist.barrier()
    g = dist.new_group([0, 1])
    x = ember.ones(2)
    dist.all_reduce(x, group=g)
    assert x.tolist() == [2.0, 2.0] and dist.get_world_size(g) == 2 and dist.get_process_group_ranks(g) == [0, 1]
    # DistributedSampler takes its rank and world size from the group
    sampler = ember.data.DistributedSampler(range(10), shuffle=False)
    assert (sampler.rank, sampler.num_replicas, list(sampler)) == (rank, world, list(range(rank, 10, world)))
    out.update(
        rank=dist.get_rank(),
        world=dist.get_world_size(),
        backend=dist.get_backend(),
        world_group=dist.group.WORLD is not None,
    )
    return out


def _errors(rank, world):
    err = {}
    # a second init_process_group
    with pytest.raises(dist.DistUsageError, match="already initialised"):
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:1", rank=rank, world_size=world)
    # ranks outside the world
    with pytest.raises(dist.DistUsageError, match=r"src=5 is not a rank of the world of size 2"):
        dist.broadcast(ember.zeros(2), src=5)
    with pytest.raises(dist.DistUsageError, match="dst=-1"):
        dist.reduce(ember.zeros(2), dst=-1)
    with pytest.raises(dist.DistUsageError, match="this rank itself"):
        dist.send(ember.zeros(2), dst=rank)
    with pytest.raises(dist.DistUsageError, match="AVG needs a floating-point"):
        dist.all_reduce(ember.ones(2, dtype=ember.int64), op="avg")
    with pytest.raises(dist.DistUsageError, match="one tensor per rank"):
        dist.all_gather([ember.zeros(2)], ember.zeros(2))
    with pytest.raises(dist.DistUsageError, match="must match"):
        dist.all_gather([ember.zeros(2), ember.zeros(3)], ember.zeros(2))
    with pytest.raises(TypeError, match=r"ember\.Tensor"):
        dist.all_reduce(np.zeros(2))
    with pytest.raises(dist.DistError, match="read-only"):
        dist.all_reduce(ember.ones(1).expand(3))
    # different shapes, dtypes, collectives across ranks: every rank raises, naming each rank's call
    shape = (3,) if rank == 0 else (4,)
    with pytest.raises(dist.DistUsageError) as e:
        dist.all_reduce(ember.zeros(*shape))
    err["shape"] = str(e.value)
    dtype = ember.float32 if rank == 0 else ember.int32  # same byte size: gloo alone would reduce nonsense
    with pytest.raises(dist.DistUsageError) as e:
        dist.all_reduce(ember.zeros(3, dtype=dtype))
    err["dtype"] = str(e.value)
    with pytest.raises(dist.DistUsageError) as e:
        if rank == 0:
            dist.all_reduce(ember.zeros(3))
        else:
            dist.broadcast(ember.zeros(3), src=0)
    err["op"] = str(e.value)
    # the group still works after those errors
    x = ember.ones(2)
    dist.all_reduce(x)
    assert x.tolist() == [2.0, 2.0]
    return err


def test_collectives_equal_torch_distributed():
    res = run_group(_collectives)
    assert [r["rank"] for r in res] == [0, 1] and all(r["world"] == 2 and r["backend"] == "gloo" for r in res)
    assert all(r["world_group"] for r in res)


def test_errors_name_the_problem():
    res = run_group(_errors)
    for r in res:  # every rank reports the same mismatch, naming each rank's call
        assert "rank 0: all_reduce(float32[3], op=SUM); rank 1: all_reduce(float32[4], op=SUM)" in r["shape"]
        assert "rank 0: all_reduce(float32[3], op=SUM); rank 1: all_reduce(int32[3], op=SUM)" in r["dtype"]
        assert "rank 1: broadcast(float32[3], src=0)" in r["op"]


def test_without_a_group():
    pytest.importorskip("torch")
    assert dist.is_available() and not dist.is_initialized() and dist.group.WORLD is None
    for call in (lambda: dist.all_reduce(ember.ones(2)), dist.get_rank, lambda: dist.barrier()):
        with pytest.raises(dist.NotInitializedError, match="init_process_group"):
            call()
    with pytest.raises(RuntimeError, match="not initialised"):  # also a RuntimeError, as PyTorch code catches
        dist.get_world_size()
    with pytest.raises(dist.DistUsageError, match="rank 2 is outside the world of size 2"):
        dist.init_process_group("gloo", rank=2, world_size=2)
    with pytest.raises(dist.DistUsageError, match="unknown backend 'nccll'"):
        dist.init_process_group("nccll", rank=0, world_size=1)
    with pytest.raises(dist.DistUsageError, match="timeout"):
        dist.init_process_group("gloo", rank=0, world_size=1, timeout=-1)
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(dist.DistUsageError, match="nccl"):
            dist.init_process_group("nccl", rank=0, world_size=1)


def test_a_cpu_tensor_to_nccl_is_refused():
    pytest.importorskip("torch")
    from ember.distributed._collectives import _check_devices

    class NcclGroup:  # stands in for torch.distributed with an NCCL default group (no GPU needed)
        group = types.SimpleNamespace(WORLD=object())

        @staticmethod
        def get_backend(group=None):
            return "nccl"

    with pytest.raises(dist.DistUsageError, match="NCCL backend needs CUDA tensors, got a tensor on cpu"):
        _check_devices("all_reduce", NcclGroup, None, [ember.ones(2, device="cpu")])


def test_timeout_is_given_to_torch():
    pytest.importorskip("torch")
    from ember.distributed._group import _timeout

    assert _timeout(5) == datetime.timedelta(seconds=5) and _timeout(None) is None


def test_ember_info_lists_the_distributed_backends(capsys):
    pytest.importorskip("torch")
    from ember.cli import main

    assert main(["info"]) == 0
    out = capsys.readouterr().out
    status = dist.backend_status()
    assert set(status) == {"gloo", "nccl", "mpi", "ucc"}
    if status["nccl"] is None:  # a CUDA build of torch that sees a GPU
        assert "distributed (torch.distributed): gloo, nccl" in out
    else:
        assert "distributed (torch.distributed): gloo" in out and f"nccl: {status['nccl']}" in out


def test_a_numpy_tensor_keeps_one_torch_view_while_it_holds_the_same_array():
    """``borrow`` makes the zero-copy view once per tensor (a fresh one per call cost ~10 us): the same view
    for the same array, a new one when the tensor's array changed, and nothing kept once the tensor is gone."""
    import gc

    from ember.distributed import _interop

    pytest.importorskip("torch")
    if ember.arange(1.0)._backend.name != "numpy":
        pytest.skip("the view is made for NumPy arrays only (torch tensors go as they are)")
    x = ember.arange(6.0)
    first = _interop.borrow(x, "all_reduce", writable=True).torch
    assert _interop.borrow(x, "all_reduce", writable=True).torch is first
    x._data = np.full(6, 7.0)  # an op that rebinds the tensor's array
    second = _interop.borrow(x, "all_reduce", writable=True).torch
    assert second is not first and second.data_ptr() == x._data.ctypes.data and second.tolist() == [7.0] * 6
    strided = x[::2]  # copied into a dense buffer each time: never cached
    assert _interop.borrow(strided, "all_reduce").torch is not _interop.borrow(strided, "all_reduce").torch
    key = id(x)
    assert key in _interop._VIEWS
    del x, first, second, strided  # (a view keeps its base alive)
    gc.collect()
    assert key not in _interop._VIEWS


def test_a_process_group_that_returns_no_work_is_not_waited_on():
    """torch.distributed's own all_reduce allows a backend that finishes ``allreduce`` in C++ and returns no Work
    (NCCL in torch 2.11 does); Ember's direct call on the default group must too."""
    torch = pytest.importorskip("torch")
    from ember.distributed._collectives import _all_reduce_now

    calls = []

    class DoneInCpp:
        def allreduce(self, tensors, opts):
            calls.append(tensors)

    pg = DoneInCpp()
    tdist = types.SimpleNamespace(
        group=types.SimpleNamespace(WORLD=pg), AllreduceOptions=torch.distributed.AllreduceOptions,
        distributed_c10d=types.SimpleNamespace(_world=types.SimpleNamespace(pg_coalesce_state={})),
    )  # fmt: skip
    _all_reduce_now(tdist, torch.ones(2), dist.ReduceOp.SUM, None)
    assert len(calls) == 1


def test_gather_and_scatter_single_use_the_names_of_the_installed_torch():
    """torch 2.13 renamed all_gather_into_tensor/reduce_scatter_tensor (and deprecated the old names); older
    torch has only those (the GPU machine's 2.11 failed with AttributeError)."""
    from ember.distributed._interop import gather_single, scatter_single

    def gather_old(*a, **k):
        return "old gather"

    def scatter_old(*a, **k):
        return "old scatter"

    before = types.SimpleNamespace(all_gather_into_tensor=gather_old, reduce_scatter_tensor=scatter_old)
    assert gather_single(before) is gather_old and scatter_single(before) is scatter_old
    now = types.SimpleNamespace(all_gather_single=len, reduce_scatter_single=abs, **vars(before))
    assert gather_single(now) is len and scatter_single(now) is abs


def test_nccl_invalid_usage_names_its_usual_cause():
    pytest.importorskip("torch")
    from ember.distributed._group import backend_error

    e = RuntimeError("NCCL error in: NCCLUtils.cpp:93, invalid usage (run with NCCL_DEBUG=WARN for details)")
    msg = str(backend_error("broadcast_object_list", None, e))
    assert msg.startswith("broadcast_object_list failed on this rank: NCCL error"), msg
    assert "two ranks on one GPU" in msg and "backend='gloo'" in msg, msg
    assert "two ranks on one GPU" not in str(backend_error("all_reduce", None, RuntimeError("Connection closed")))
