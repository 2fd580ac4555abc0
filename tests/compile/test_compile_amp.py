"""``ember.compile`` with ``ember.autocast`` and ``GradScaler``: replays equal eager bit for bit, the autocast
state is a guard, and the scaler's scale, inf/NaN check and update stay live (issue 28, item 5)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn


def _lower():
    # bfloat16 on every CPU backend (NumPy: ml_dtypes); CuPy has none: float16 there
    return ember.float16 if ember.backends.current(_dev()) == "cupy" else ember.bfloat16


def _dev():
    """The default device's type: autocast and the scaler follow it (``EMBER_DEVICE=cuda`` on a GPU machine)."""
    return ember.get_default_device().type


def _host(a):
    """float32 NumPy values of a tensor, or of an optimizer state array (NumPy, torch or CuPy)."""
    if isinstance(a, ember.Tensor):
        return a.detach().float().cpu().numpy()
    if hasattr(a, "float"):
        return a.float().cpu().numpy()
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _bits(a, b):
    x, y = _host(a), _host(b)
    return a.dtype == b.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def test_the_autocast_state_is_a_guard():
    lin = nn.Linear(4, 3)
    f = ember.compile(lambda x: lin(x))
    x = ember.randn(2, 4)
    with ember.no_grad():
        for _ in range(3):  # recorded, checked, replayed: float32
            assert _bits(f(x), lin(x))
        with ember.autocast(_dev(), dtype=_lower()):
            for _ in range(3):  # another program (was: the float32 one replayed, silently)
                out = f(x)
                assert out.dtype == _lower() and _bits(out, lin(x))
        assert _bits(f(x), lin(x)) and f(x).dtype == ember.float32
    assert not f.eager and len(f.cache) == 2 and f.stats["replays"] >= 4


def _make():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = ember.optim.SGD(model.parameters(), lr=0.125, momentum=0.9)
    scaler = ember.amp.GradScaler(_dev(), init_scale=2.0**4, growth_interval=2)
    return model, opt, scaler


def _step(model, opt, scaler, x, y, clip):
    opt.zero_grad()
    with ember.autocast(_dev(), dtype=_lower()):
        loss = nn.functional.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    if clip:
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    scaler.step(opt)
    scaler.update()
    return loss


@pytest.mark.parametrize("clip", [False, True])
def test_a_grad_scaler_step_replays_bit_for_bit_with_a_live_scale(clip):
    (m1, o1, s1), (m2, o2, s2) = _make(), _make()
    compiled = ember.compile(lambda x, y: _step(m1, o1, s1, x, y, clip))
    scales = []
    with np.errstate(all="ignore"):
        for i in range(10):
            x, y = ember.randn(5, 6), ember.randint(0, 3, (5,))
            if i in (4, 7):  # a non-finite batch: the step is skipped and the scale backs off
                x = x * float("inf")
            a, b = compiled(x, y), _step(m2, o2, s2, x, y, clip)
            assert _bits(a, b), i
            for p, q in zip(m1.parameters(), m2.parameters(), strict=True):
                assert _bits(p, q), i
            for st1, st2 in zip(o1.state.values(), o2.state.values(), strict=True):
                assert _bits(st1["momentum_buffer"], st2["momentum_buffer"]), i
            assert s1.state_dict() == s2.state_dict(), i
            scales.append(s1.get_scale())
    assert scales == [16.0, 32.0, 32.0, 64.0, 32.0, 32.0, 64.0, 32.0, 32.0, 64.0]  # grown, backed off: all live
    assert (
        not compiled.eager and len(compiled.cache) == 1 and compiled.stats["replays"] == 8
    )  # calls 3-10 (2: checked beside eager)
