"""Calls inside a compiled step that must run live at each replay: a learning-rate scheduler's ``step``, as the
optimizer's ``step``; the checked replay puts their Python state back (issue 28, item 2)."""

from __future__ import annotations

import pytest

import ember
import ember.nn as nn
from ember.optim import lr_scheduler as sched

SCHEDULES = {
    "step": lambda o: sched.StepLR(o, step_size=2, gamma=0.5),
    "one_cycle": lambda o: sched.OneCycleLR(o, max_lr=0.5, total_steps=12),  # rates and momenta
    "sequential": lambda o: sched.SequentialLR(
        o, [sched.LinearLR(o, start_factor=0.25, total_iters=3), sched.ExponentialLR(o, gamma=0.8)], milestones=[3]
    ),
    "plateau": lambda o: sched.ReduceLROnPlateau(o, factor=0.5, patience=0),  # reads the loss on the host
}


def _make(kind):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    opt = ember.optim.SGD(model.parameters(), lr=0.25, momentum=0.9)
    return model, opt, SCHEDULES[kind](opt)


def _step(model, opt, schedule, x, y):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    if isinstance(schedule, sched.ReduceLROnPlateau):
        schedule.step(loss)
    else:
        schedule.step()
    return loss


@pytest.mark.parametrize("kind", list(SCHEDULES))
def test_a_scheduler_stepped_inside_a_compiled_step_advances_at_each_replay(kind):
    # was: the schedule's Python ran only while recording, and replays kept the rate of that call (silently)
    (m1, o1, s1), (m2, o2, s2) = _make(kind), _make(kind)
    compiled = ember.compile(lambda x, y: _step(m1, o1, s1, x, y))
    rates = []
    for i in range(10):
        x, y = ember.randn(6, 4), ember.randn(6, 2)
        a, b = compiled(x, y), _step(m2, o2, s2, x, y)
        assert ember.equal(a, b), i
        for p, q in zip(m1.parameters(), m2.parameters(), strict=True):
            assert ember.equal(p, q), i
        assert [g["lr"] for g in o1.param_groups] == [g["lr"] for g in o2.param_groups], i
        assert [g.get("momentum") for g in o1.param_groups] == [g.get("momentum") for g in o2.param_groups], i
        rates.append(o1.param_groups[0]["lr"])
    assert len(set(rates)) > 2  # the schedule moved while the program replayed
    assert not compiled.eager and len(compiled.cache) == 1 and compiled.stats["replays"] == 8


def test_a_step_that_seeds_reseeds_at_each_replay():
    # was: the checked replay found the generator's state different and the function went eager
    gen = ember.Generator()

    def step(x):
        ember.manual_seed(7)
        gen.manual_seed(11)
        return nn.functional.dropout(x, 0.5) + ember.rand(3) + ember.rand(3, generator=gen)

    compiled = ember.compile(step)
    x = ember.ones(3)
    want = step(x)
    for _ in range(4):
        assert ember.equal(compiled(x), want)
        assert ember.get_rng_state() == (step(x), ember.get_rng_state())[1]
    assert not compiled.eager and compiled.stats["replays"] == 2  # calls 3-4 (2: checked beside eager)
