"""NCCL and CUDA tensors: a single-rank NCCL group and the CUDA path of every collective (skipped without a GPU).

NCCL needs one GPU per rank (it refuses two ranks on one GPU: "invalid usage"), so with one GPU the NCCL
group has one rank; the collectives still go through NCCL with CUDA tensors (zero-copy: the torch backend's
own CUDA tensors, or CuPy arrays through DLPack). Two ranks sharing one GPU use gloo, which takes CUDA tensors
for broadcast and all_reduce; they are spawned, not forked: CUDA does not work in a child forked after the
parent initialised it.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.multiprocessing as mp

from .conftest import free_port

pytestmark = pytest.mark.distributed


def _cuda_ready():
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU here (NCCL needs one per rank)"
    if not torch.distributed.is_nccl_available():
        return "this torch build has no NCCL"
    if not ember.cuda.is_available():
        return "Ember has no CUDA backend here"
    return None


_REASON = _cuda_ready()


@pytest.fixture
def nccl_group():
    if _REASON is not None:
        pytest.skip(_REASON)
    if dist.is_initialized():
        pytest.skip("a process group is already initialised in this process")
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_every_collective_on_cuda_tensors_through_nccl(nccl_group):
    from ember.distributed._interop import borrow

    assert dist.get_backend() == "nccl"
    x = ember.arange(6.0, device="cuda").reshape(2, 3)
    a = x._data
    assert borrow(x, "t").torch.data_ptr() == (a.data_ptr() if hasattr(a, "data_ptr") else a.data.ptr)  # no copy
    ref = x.cpu().numpy().copy()
    v = x._vc[0]
    dist.all_reduce(x)
    assert x._vc[0] == v + 1 and x.device.type == "cuda"
    np.testing.assert_array_equal(x.cpu().numpy(), ref)
    for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
        y = x.clone()
        dist.all_reduce(y, op=op)
        np.testing.assert_array_equal(y.cpu().numpy(), ref)
    dist.broadcast(x, src=0)
    dist.reduce(x, dst=0)
    out = [ember.zeros(2, 3, device="cuda")]
    dist.all_gather(out, x)
    np.testing.assert_array_equal(out[0].cpu().numpy(), ref)
    big = ember.zeros(2, 3, device="cuda")
    dist.all_gather_into_tensor(big, x)
    small = ember.zeros(2, 3, device="cuda")
    dist.reduce_scatter_tensor(small, x)
    np.testing.assert_array_equal(small.cpu().numpy(), ref)
    work = dist.all_reduce(x, async_op=True)
    work.wait()
    dist.barrier()
    objs = [None]
    dist.all_gather_object(objs, {"a": 1})
    assert objs == [{"a": 1}]
    with pytest.raises(dist.DistUsageError, match="NCCL backend needs CUDA tensors"):
        dist.all_reduce(ember.ones(2, device="cpu"))


def test_ddp_on_one_gpu(nccl_group):
    import ember.nn as nn
    import ember.nn.functional as F
    from ember.nn.parallel import DistributedDataParallel

    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device="cuda")
    ddp = DistributedDataParallel(model, device_ids=[int(os.environ.get("LOCAL_RANK", "0"))])
    x, y = ember.randn(5, 4, device="cuda"), ember.tensor([0, 1, 0, 1, 1], device="cuda")
    F.cross_entropy(ddp(x), y).backward()
    assert all(p.grad is not None and p.grad.device.type == "cuda" for p in model.parameters())
    with pytest.raises(dist.DistUsageError, match="NCCL but the module is on cpu"):
        DistributedDataParallel(nn.Linear(2, 2, device="cpu"))


def _gloo_rank_on_the_gpu(rank, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2, timeout=60)
    try:
        x = ember.ones(3, device="cuda") * (rank + 1)
        dist.all_reduce(x)
        assert x.device.type == "cuda" and x.cpu().tolist() == [3.0, 3.0, 3.0], x
        y = ember.ones(2, device="cuda") * rank
        dist.broadcast(y, src=1)
        assert y.device.type == "cuda" and y.cpu().tolist() == [1.0, 1.0], y
    finally:
        dist.destroy_process_group()


def test_two_spawned_ranks_share_one_gpu_through_gloo():
    if _REASON is not None:
        pytest.skip(_REASON)
    mp.spawn(_gloo_rank_on_the_gpu, args=(free_port(),), nprocs=2, start_method="spawn")
