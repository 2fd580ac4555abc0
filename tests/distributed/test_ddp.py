"""DistributedDataParallel on 2 gloo ranks: equal to one process with the whole batch, and to PyTorch's DDP.

One group checks, in float64, that 2 ranks x batch B for 10 steps give the parameters of one process with
batch 2B within 1e-10 (SGD with momentum, then Adam; an MLP, and a small CNN whose BatchNorm is converted to
SyncBatchNorm), ``no_sync`` accumulation, unused parameters, a loss term outside the module, buckets sent
during backward. A second group compares with PyTorch's DDP from the same initial weights in float32 (plain
BatchNorm with ``broadcast_buffers``).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: N817 - PyTorch code's habit

from .conftest import run_group

pytestmark = pytest.mark.distributed

B = 4


def _mlp(dtype):
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3)).to(dtype=dtype)


def _cnn(dtype):
    ember.manual_seed(1)
    return nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 5 * 5, 3)
    ).to(dtype=dtype)


def _data(kind, step, dtype):
    rng = np.random.default_rng(100 + step)
    x = rng.standard_normal((2 * B, 6) if kind == "mlp" else (2 * B, 2, 5, 5))
    y = rng.integers(0, 3, 2 * B)
    return ember.tensor(x, dtype=dtype), ember.tensor(y)


def _params(model):
    return {n: p.detach().numpy().copy() for n, p in model.state_dict().items()}


def _train(model, opt, kind, rank, dtype, steps=10, ddp=None, extra=None):
    """``steps`` steps; with ``ddp`` each rank takes its half of the global batch, else the whole batch."""
    net = ddp if ddp is not None else model
    for step in range(steps):
        x, y = _data(kind, step, dtype)
        if ddp is not None:
            x, y = x[rank * B : (rank + 1) * B], y[rank * B : (rank + 1) * B]
        loss = F.cross_entropy(net(x), y)
        if extra is not None:
            loss = loss + extra(model)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return _params(model)


def _close(a, b, tol, what):
    assert a.keys() == b.keys(), what
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=0, atol=tol, err_msg=f"{what}: {k}")


def _optimizers():
    return [
        ("sgd", lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9)),
        ("adam", lambda ps: ember.optim.Adam(ps, lr=0.01)),
    ]


def _equivalence(rank, world):
    f64 = ember.float64
    results = {}
    for kind, make in (("mlp", _mlp), ("cnn", _cnn)):
        for oname, mk in _optimizers():
            ref_model = make(f64)
            ref = _train(ref_model, mk(ref_model.parameters()), kind, rank, f64)
            model = make(f64)
            if rank == 1:  # a different start on rank 1: DDP must broadcast rank 0's
                with ember.no_grad():
                    for p in model.parameters():
                        p.add_(1.0)
            if kind == "cnn":
                model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
                assert isinstance(model[1], nn.SyncBatchNorm)
            ddp = DDP(model, bucket_cap_mb=0.001)
            got = _train(model, mk(ddp.parameters()), kind, rank, f64, ddp=ddp)
            _close(got, ref, 1e-10, f"{kind}/{oname}")
            results[f"{kind}/{oname}"] = True
    # buckets were sent while backward still ran (not all at the end)
    model = _mlp(f64)
    ddp = DDP(model, bucket_cap_mb=0.001)
    assert len(ddp.reducer.buckets) >= 2
    x, y = _data("mlp", 0, f64)
    F.cross_entropy(ddp(x[:B]), y[:B]).backward()
    results["early"] = ddp.reducer.sent_during_backward
    assert set(ddp.state_dict()) == {f"module.{k}" for k in model.state_dict()} and ddp.module is model

    # no_sync: two micro-batches, the second synchronising, equal one step on their union
    model = _mlp(f64)
    ddp = DDP(model)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    x, y = _data("mlp", 0, f64)
    halves = [
        (x[rank * B : rank * B + B // 2], y[rank * B : rank * B + B // 2]),
        (x[rank * B + B // 2 : rank * B + B], y[rank * B + B // 2 : rank * B + B]),
    ]
    with ddp.no_sync():
        (F.cross_entropy(ddp(halves[0][0]), halves[0][1]) / 2).backward()
    (F.cross_entropy(ddp(halves[1][0]), halves[1][1]) / 2).backward()
    opt.step()
    ref_model = _mlp(f64)
    ref = _train(ref_model, ember.optim.SGD(ref_model.parameters(), lr=0.1), "mlp", rank, f64, steps=1)
    _close(_params(model), ref, 1e-12, "no_sync")

    # a loss term that uses parameters outside the module's output (weight penalty): still the large-batch step
    penalty = lambda m: 1e-2 * sum((p * p).sum() for p in m.parameters())
    ref_model = _mlp(f64)
    ref = _train(ref_model, ember.optim.SGD(ref_model.parameters(), lr=0.1), "mlp", rank, f64, steps=3, extra=penalty)
    model = _mlp(f64)
    ddp = DDP(model, bucket_cap_mb=0.001)
    got = _train(model, ember.optim.SGD(ddp.parameters(), lr=0.1), "mlp", rank, f64, steps=3, ddp=ddp, extra=penalty)
    _close(got, ref, 1e-12, "penalty outside the module")

    # gradient_as_bucket_view: each .grad is its bucket's memory, and training still equals the large-batch steps
    # (grads set to None or zeroed in place between steps; a late loss term, which refills the buckets)
    for set_to_none, extra in ((True, None), (False, None), (True, penalty)):
        ref_model = _mlp(f64)
        ref_opt = ember.optim.SGD(ref_model.parameters(), lr=0.1, momentum=0.9)
        model = _mlp(f64)
        ddp = DDP(model, bucket_cap_mb=0.001, gradient_as_bucket_view=True)
        opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
        for step in range(4):
            x, y = _data("mlp", step, f64)
            for net, o, xs, ys in (
                (ref_model, ref_opt, x, y),
                (ddp, opt, x[rank * B : rank * B + B], y[rank * B : rank * B + B]),
            ):
                loss = F.cross_entropy(net(xs), ys)
                if extra is not None:
                    loss = loss + extra(model if net is ddp else ref_model)
                o.zero_grad(set_to_none=set_to_none)
                loss.backward()
                o.step()
        _close(_params(model), _params(ref_model), 1e-12, f"bucket view (set_to_none={set_to_none}, {extra})")
        views = {id(s) for b in ddp.reducer.buckets for s in b.slots}
        assert all(id(p.grad._data) in views for p in model.parameters())
    return results


class _Branches(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(3, 2), nn.Linear(3, 2), nn.Linear(3, 2)

    def forward(self, x, use_b):
        return self.a(x) + (self.b(x) if use_b else 0)


def _unused_and_errors(rank, world):
    ember.manual_seed(0)
    model = _Branches().to(dtype=ember.float64)
    ddp = DDP(model, find_unused_parameters=True)
    x = ember.ones(2, 3, dtype=ember.float64)
    ddp(x, use_b=rank == 0).sum().backward()  # b: used on rank 0 only; c: on no rank
    out = {"a": model.a.weight.grad.tolist(), "b": model.b.weight.grad.tolist(), "c": model.c.weight.grad}
    ember.manual_seed(0)
    strict = DDP(_Branches().to(dtype=ember.float64))
    with pytest.raises(dist.DistUsageError, match=r"parameters \['c.weight', 'c.bias'\] were not used"):
        strict(x, use_b=True).sum().backward()
    # a model wrapped again once its first wrapper is gone (not while it lives)
    with pytest.raises(dist.DistUsageError, match="already wrapped"):
        DDP(model)
    del ddp
    again = DDP(model, find_unused_parameters=True)
    again(x, use_b=True).sum().backward()
    # bad input
    with pytest.raises(dist.DistUsageError, match="no parameter that requires a gradient"):
        DDP(nn.ReLU())
    with pytest.raises(dist.DistUsageError, match="device_ids"):
        DDP(nn.Linear(2, 2), device_ids=[0])
    with pytest.raises(dist.DistUsageError, match=r"rank 0 has 0.weight as ember.float32\[3, 2\] but rank 1 has"):
        DDP(nn.Sequential(nn.Linear(2, 3 + rank)))
    return out


def test_ddp_equals_one_process_with_the_whole_batch():
    res = run_group(_equivalence, timeout=240)
    for r in res:
        assert r["early"] >= 1, "no bucket was sent during backward"


def test_find_unused_parameters_and_bad_input():
    res = run_group(_unused_and_errors)
    for r in res:
        assert r["c"] is None  # no rank used it: left alone
        assert r["a"] == [[2.0, 2.0, 2.0]] * 2  # the same on both ranks
        assert r["b"] == [[1.0, 1.0, 1.0]] * 2  # rank 0's 2, averaged with rank 1's 0


def _torch_ddp(rank, world):
    import torch

    f32 = ember.float32
    results = {}
    for kind, make in (("mlp", _mlp), ("cnn", _cnn)):
        for oname, mk in _optimizers():
            model = make(f32)
            tmodel = _to_torch(model, kind)
            tddp = torch.nn.parallel.DistributedDataParallel(tmodel)
            topt = (
                torch.optim.SGD(tddp.parameters(), lr=0.1, momentum=0.9)
                if oname == "sgd"
                else torch.optim.Adam(tddp.parameters(), lr=0.01)
            )
            ddp = DDP(model)
            got = _train(model, mk(ddp.parameters()), kind, rank, f32, ddp=ddp)
            for step in range(10):
                x, y = _data(kind, step, f32)
                x = torch.tensor(x.numpy()[rank * B : (rank + 1) * B])
                y = torch.tensor(y.numpy()[rank * B : (rank + 1) * B])
                loss = torch.nn.functional.cross_entropy(tddp(x), y)
                topt.zero_grad()
                loss.backward()
                topt.step()
            want = {k: v.detach().numpy() for k, v in tmodel.state_dict().items()}
            _close(got, want, 1e-5, f"vs torch {kind}/{oname}")
            results[f"{kind}/{oname}"] = True
    return results


def _to_torch(model, kind):
    import torch

    if kind == "mlp":
        t = torch.nn.Sequential(
            torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)
        )
    else:
        t = torch.nn.Sequential(
            torch.nn.Conv2d(2, 4, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(4),
            torch.nn.ReLU(),
            torch.nn.Flatten(),
            torch.nn.Linear(4 * 5 * 5, 3),
        )
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    return t


def test_ddp_equals_pytorch_ddp(torch):
    import torch._dynamo  # what torch's DDP imports on first use: once here, not in every rank

    # with a GPU visible to torch, its autograd engine refuses backward in a child forked after this process ran
    # one ("Unable to handle autograd's threading in combination with fork-based multiprocessing"): spawn there
    run_group(_torch_ddp, timeout=240, start_method="spawn" if torch.cuda.is_available() else "fork")
