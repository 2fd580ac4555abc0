"""``ember.compile`` of whole DDP training steps on 2 gloo ranks: replays bit-identical to eager DDP.

Each scenario trains two copies of one model from the same weights on each rank, one step function run eagerly
and the same function under ``ember.compile``, on the same per-rank batches, and compares after every step, bit
for bit: the loss, every parameter, buffer and optimizer state tensor. The compiled run must replay (its
``stats``) and warn about nothing, so a silent fall back to eager fails too. DDP's collectives (the buffer
broadcast, the bucketed gradient all-reduce) are host steps of the replayed program; the rank's programs and
eager runs make the same calls in the same order, so a rank that recaptures meets the other's replay.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.distributed import broadcast as imported_broadcast  # (recorded however it was imported)
from ember.distributed.optim import ZeroRedundancyOptimizer
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: N817 - PyTorch code's habit

from .conftest import run_group

pytestmark = pytest.mark.distributed

STEPS = 20


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))


def _cnn(sync_bn=False):
    ember.manual_seed(1)
    m = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                      nn.Linear(4 * 5 * 5, 3))  # fmt: skip
    return nn.SyncBatchNorm.convert_sync_batchnorm(m) if sync_bn else m


class _Branchy(nn.Module):
    """``b`` is used only when ``use_b``; ``never`` is never used (find_unused_parameters)."""

    def __init__(self):
        super().__init__()
        ember.manual_seed(2)
        self.a, self.b, self.never = nn.Linear(6, 8), nn.Linear(8, 8), nn.Linear(8, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x, use_b):
        h = F.relu(self.a(x))
        if use_b:
            h = F.relu(self.b(h))
        return self.head(h)


def _batch(kind, rank, step, n=4):
    rng = np.random.default_rng(1000 * step + rank)
    x = rng.standard_normal((n, 6) if kind == "mlp" else (n, 2, 5, 5)).astype(np.float32)
    return ember.tensor(x), ember.tensor(rng.integers(0, 3, n))


def _state(model, opt):
    out = {f"m.{k}": v.detach().numpy().copy() for k, v in model.state_dict().items()}
    own = opt.optim if isinstance(opt, ZeroRedundancyOptimizer) else opt  # (ZeRO: this rank's shard)
    for i, st in enumerate(own.state_dict()["state"].values()):
        for k, v in st.items():
            out[f"opt.{i}.{k}"] = v.detach().numpy().copy() if isinstance(v, ember.Tensor) else np.asarray(v)
    return out


def _diff(a, b):
    """The first key whose array differs (bits, dtype or shape), else None."""
    if a.keys() != b.keys():
        return f"keys {sorted(a)} != {sorted(b)}"
    for k in a:
        if a[k].dtype != b[k].dtype or a[k].shape != b[k].shape or a[k].tobytes() != b[k].tobytes():
            return k
    return None


def _twins(make, opt_cls, opt_kw, **ddp_kw):
    """The eager and the compiled copy: ``(model, ddp, optimizer)`` each, from the same weights."""
    out = []
    for _ in range(2):
        m = make()
        d = DDP(m, **ddp_kw)
        opt = opt_cls(m.parameters(), **opt_kw)
        out.append((m, d, opt))
    return out


def _run(rank, name, make, opt_cls, opt_kw, kind="mlp", schedule=None, **ddp_kw):
    """Train the twins ``STEPS`` steps; ``schedule(step)`` gives what each step does (see ``_plain``).

    Returns ``(name, first difference or None, compiled stats, warnings)``.
    """
    twins = _twins(make, opt_cls, opt_kw, **ddp_kw)
    schedule = schedule or _plain
    results = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for compiled, (m, d, opt) in zip((False, True), twins, strict=True):
            step, evaluate = _steps(d, opt)
            if compiled:
                step, evaluate = ember.compile(step), ember.compile(evaluate)
            trace = []
            for i in range(STEPS):
                plan = schedule(i)
                x, y = _batch(kind, rank, i, plan.get("n", 4))
                if "lr" in plan:
                    for g in opt.param_groups:
                        g["lr"] = plan["lr"]
                if plan.get("eval"):
                    m.eval()
                    loss = evaluate(x, y)
                    m.train()
                elif plan.get("no_sync"):
                    with d.no_sync():
                        loss = step(x, y, False, **plan.get("kw", {}))
                else:
                    loss = step(x, y, True, **plan.get("kw", {}))
                trace.append({"loss": loss.detach().numpy().copy(), **_state(m, opt)})
            results.append((trace, getattr(step, "stats", None), getattr(evaluate, "stats", None)))
    (eager, _, _), (comp, stats, estats) = results
    first = next(((i, d) for i, (a, b) in enumerate(zip(eager, comp, strict=True)) if (d := _diff(a, b))), None)
    return name, first, stats, estats, [str(w.message) for w in caught]


def _steps(d, opt):
    def step(x, y, update, **kw):
        loss = F.cross_entropy(d(x, **kw), y)
        loss.backward()
        if update:
            opt.step()
            opt.zero_grad()
        return loss

    def evaluate(x, y):
        with ember.no_grad():
            return F.cross_entropy(d(x), y)

    return step, evaluate


def _plain(i):
    return {}


def _varied(i):
    """A learning-rate change, evaluation steps between training steps, and a batch of another size."""
    plan = {}
    if i == 8:
        plan["lr"] = 0.02
    if i in (5, 11, 17):
        plan["eval"] = True
    if i in (14, 15):
        plan["n"] = 6
    return plan


def _accumulate(i):
    return {"no_sync": i % 3 != 2}


def _branches(rank):
    # rank 0 uses ``b`` every third step, rank 1 never: every rank averages it when one used it
    return lambda i: {"kw": {"use_b": rank == 0 and i % 3 == 0}}


def _scenarios(rank, world):
    sgd, adam = ember.optim.SGD, ember.optim.Adam
    mom = {"lr": 0.05, "momentum": 0.9}
    return (
        _user_collectives(rank, world),
        _forward_only(rank),
        [
            _run(rank, "mlp sgd+momentum", _mlp, sgd, mom, schedule=_varied),
            _run(rank, "mlp adam", _mlp, adam, {"lr": 0.01}, schedule=_varied),
            _run(rank, "cnn batchnorm adam", _cnn, adam, {"lr": 0.01}, kind="cnn", schedule=_varied),
            _run(rank, "mlp no_sync", _mlp, sgd, mom, schedule=_accumulate),
            _run(rank, "unused", _Branchy, sgd, mom, schedule=_branches(rank), find_unused_parameters=True),
            _run(rank, "bucket view", _mlp, sgd, mom, bucket_cap_mb=0.001, gradient_as_bucket_view=True),
            _run(rank, "syncbn", lambda: _cnn(sync_bn=True), sgd, mom, kind="cnn"),
            _run(rank, "zero adam", _mlp, ZeroRedundancyOptimizer, {"optimizer_class": adam, "lr": 0.01}),
        ],
    )


def _user_collectives(rank, world):
    """A step calling collectives itself (replayed), then ones whose use cannot be (eager, with a note)."""

    def step(x, w):
        y = (x * w).sum(0)
        dist.all_reduce(y)
        b = x[0] * 3
        dist.broadcast(b, 0)
        r = (x * 2).sum(0)
        dist.reduce(r, dst=0)
        parts = [ember.zeros(6) for _ in range(world)]
        dist.all_gather(parts, y)
        big = ember.zeros(world * 6)
        dist.all_gather_into_tensor(big, b)
        out = ember.zeros(6 // world)
        dist.reduce_scatter_tensor(out, y + b)
        b1 = x[1] * 5
        imported_broadcast(b1, 1)
        return y, b, r, ember.stack(parts), big, out, b1

    def read(x):
        y = x.sum(0)
        dist.all_reduce(y)
        return y * 2 if y.sum().item() > 0 else y  # a collective's result read on the host

    def asynchronous(x):
        y = x.sum(0)
        dist.all_reduce(y, async_op=True).wait()
        return y

    def barrier(x):
        dist.barrier()
        return x * 2

    def wrap(x):
        ember.manual_seed(3)
        d = DDP(nn.Linear(6, 2))
        return d(x).detach()

    w = ember.tensor(np.arange(6, dtype=np.float32))
    out = {}
    for fn in (step, read, asynchronous, barrier, wrap):
        c = ember.compile(fn)
        same = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for i in range(5):
                x, _ = _batch("mlp", rank, i)
                args = (x, w) if fn is step else (x,)
                e, g = fn(*args), c(*args)
                e, g = (e, g) if isinstance(e, tuple) else ((e,), (g,))
                same.append(all(a.numpy().tobytes() == b.numpy().tobytes() for a, b in zip(e, g, strict=True)))
        out[fn.__name__] = (same, c.stats, [str(m.message) for m in caught])
    return out


@pytest.fixture(scope="module")
def group():
    return run_group(_scenarios, timeout=300)


def _forward_only(rank):
    """A compiled forward through DDP (a compiled module, a compiled loss function) with backward outside it."""
    out = {}
    for mode in ("module", "function"):
        runs = []
        for compiled in (False, True):
            m, d, opt = _twins(_mlp, ember.optim.SGD, {"lr": 0.1})[0]

            def loss_of(x, y, d=d):
                return F.cross_entropy(d(x), y)

            fwd = ember.compile(d if mode == "module" else loss_of) if compiled else None
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for i in range(4):
                    x, y = _batch("mlp", rank, i)
                    loss = F.cross_entropy(fwd(x), y) if mode == "module" and compiled else (fwd or loss_of)(x, y)
                    loss.backward()
                    opt.step()
                    opt.zero_grad()
            runs.append((_state(m, opt), [str(w.message) for w in caught]))
        out[mode] = (_diff(runs[0][0], runs[1][0]), runs[1][1])
    return out


@pytest.fixture(scope="module")
def scenarios(group):
    return [ddp for _, _, ddp in group]


def test_a_compiled_forward_through_ddp_runs_eagerly_with_a_note(group):
    for _, forward, _ in group:
        for mode, (diff, caught) in forward.items():
            assert diff is None, (mode, diff)
            assert len(caught) == 1 and "forward through DistributedDataParallel" in caught[0], (mode, caught)
            assert "compile the whole training step" in caught[0]


def test_collectives_called_in_a_compiled_step_replay_as_host_steps(group):
    for rank, (user, _, _) in enumerate(group):
        same, stats, caught = user["step"]
        assert all(same) and caught == [], (rank, same, caught)
        assert stats["captures"] == 1 and stats["replays"] == 4 and stats["eager"] == 0, stats


@pytest.mark.parametrize(
    ("name", "note"),
    [
        ("read", "item() reads a tensor's value on the host"),
        ("asynchronous", "a distributed collective (all_reduce) with async_op=True"),
        ("barrier", "a distributed call (barrier) runs inside it (not captured)"),
        ("wrap", "a DistributedDataParallel is made inside it"),
    ],
)
def test_collectives_that_cannot_be_replayed_run_eagerly_with_a_note(group, name, note):
    for rank, (user, _, _) in enumerate(group):
        same, stats, caught = user[name]
        assert all(same), (rank, same)
        assert stats["replays"] == 0, stats
        assert len(caught) == 1 and "runs eagerly" in caught[0] and note in caught[0], caught


# the fewest replays each scenario must reach (of 20 calls: captures and checked replays do not count)
_REPLAYS = {"mlp sgd+momentum": 12, "mlp adam": 12, "cnn batchnorm adam": 12, "mlp no_sync": 14, "unused": 12,
            "bucket view": 18, "syncbn": 18, "zero adam": 18}  # fmt: skip


@pytest.mark.parametrize("name", list(_REPLAYS))
def test_compiled_ddp_step_replays_bit_identical_to_eager(scenarios, name):
    for rank, results in enumerate(scenarios):
        got = {r[0]: r for r in results}[name]
        _, first, stats, _, caught = got
        assert first is None, f"rank {rank}, {name}: step {first[0]} differs from eager in {first[1]}"
        assert caught == [], f"rank {rank}, {name}: {caught}"
        assert stats["replays"] >= _REPLAYS[name], f"rank {rank}, {name}: {stats}"
        assert stats["eager"] == 0, f"rank {rank}, {name}: {stats}"


def test_evaluation_steps_replay_too(scenarios):
    for results in scenarios:
        estats = {r[0]: r[3] for r in results}["mlp sgd+momentum"]
        assert estats["captures"] == 1 and estats["replays"] == 1 and estats["eager"] == 0, estats
