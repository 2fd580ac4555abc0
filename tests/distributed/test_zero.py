"""ZeroRedundancyOptimizer (ZeRO stage 1) on 2 gloo ranks: equal to the unsharded optimizer within 1e-10 (float64)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.distributed.optim import ZeroRedundancyOptimizer
from ember.nn.parallel import DistributedDataParallel

from .conftest import run_group

pytestmark = pytest.mark.distributed


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 12), nn.Tanh(), nn.Linear(12, 7), nn.Tanh(), nn.Linear(7, 3)).to(
        dtype=ember.float64
    )


def _steps(ddp, opt, rank, steps, start=0):
    for s in range(start, start + steps):
        rng = np.random.default_rng(s)
        x = ember.tensor(rng.standard_normal((8, 5)))[rank * 4 : rank * 4 + 4]
        y = ember.tensor(rng.integers(0, 3, 8))[rank * 4 : rank * 4 + 4]
        opt.zero_grad()
        F.cross_entropy(ddp(x), y).backward()
        opt.step()


def _params(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def _zero(rank, world):
    out = {}
    for name, cls, kw in (("sgd", ember.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
                          ("adam", ember.optim.Adam, {"lr": 0.01})):  # fmt: skip
        plain_model, zero_model = _model(), _model()
        plain_ddp, zero_ddp = DistributedDataParallel(plain_model), DistributedDataParallel(zero_model)
        plain = cls(plain_model.parameters(), **kw)
        zero = ZeroRedundancyOptimizer(zero_model.parameters(), optimizer_class=cls, **kw)
        _steps(plain_ddp, plain, rank, 10)
        _steps(zero_ddp, zero, rank, 10)
        for a, b in zip(_params(plain_model), _params(zero_model), strict=True):
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-10)
        # each rank holds the state of its shard only, and the shards cover every parameter
        mine = len(zero.params_of(rank))
        assert 0 < mine < 6 and len(zero.state) == mine
        # the consolidated state is a plain optimizer's: it loads on one process and steps identically
        zero.consolidate_state_dict(to=0)
        if rank == 1:
            with pytest.raises(dist.DistUsageError, match="not consolidated on rank 1"):
                zero.state_dict()
            sd = None
        else:
            sd = zero.state_dict()
            fresh = cls(_model().parameters(), **kw)
            fresh.load_state_dict(sd)
            want = plain.state_dict()
            got = fresh.state_dict()
            wl = [want["state"][k] for k in want["param_groups"][0]["params"]]
            gl = [got["state"][k] for k in got["param_groups"][0]["params"]]
            for w, g in zip(wl, gl, strict=True):
                assert w.keys() == g.keys()
                for key in w:
                    wv, gv = w[key], g[key]
                    if isinstance(wv, ember.Tensor):
                        np.testing.assert_allclose(gv.numpy(), wv.numpy(), rtol=0, atol=1e-10)
                    else:
                        assert gv == wv
        # and a whole state dict loads back into a sharded optimizer (each rank keeps its shard)
        box = [sd]
        dist.broadcast_object_list(box, src=0)
        again_model = _model()
        with ember.no_grad():
            for p, q in zip(again_model.parameters(), zero_model.parameters(), strict=True):
                p.copy_(q)
        again = ZeroRedundancyOptimizer(again_model.parameters(), optimizer_class=cls, **kw)
        again.load_state_dict(box[0])
        _steps(DistributedDataParallel(again_model), again, rank, 2, start=10)
        _steps(plain_ddp, plain, rank, 2, start=10)
        for a, b in zip(_params(plain_model), _params(again_model), strict=True):
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-10)
        out[name] = mine
    return out


def test_zero_equals_the_unsharded_optimizer():
    res = run_group(_zero)
    for name in ("sgd", "adam"):
        assert res[0][name] + res[1][name] == 6  # the two shards partition the parameters
