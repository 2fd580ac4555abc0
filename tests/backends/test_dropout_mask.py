"""Dropout's keep mask (``Backend.dropout_mask``; NumPy/CuPy: ``_kernels_random.keep_mask``): the generator's raw
64-bit stream as 32-bit draws against ``ceil(p * 2**32)``, the same bits on 3 threads as drawn serially (odd sizes,
blocks split between threads), the generator advanced by ``ceil(n / 2)`` outputs, the probability, and
``ember.compile`` replaying the draws eager makes, threads included."""

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.backends import _kernels_random as kr
from ember.backends import _kernels_threads as kt

numpy_only = pytest.mark.skipif(ember.zeros(1)._backend.name != "numpy", reason="the NumPy backend's kernels")


def _serial(seed, n, p):
    """The documented mask, drawn in one serial call: (mask, the generator's state after)."""
    bits = np.random.PCG64(seed)
    draws = bits.random_raw(-(-n // 2)).view(np.uint32)[:n].astype(np.int64)
    return draws >= math.ceil(p * 2**32), bits.state


@pytest.fixture
def split(monkeypatch):
    """3 kernel threads, blocks of 6 elements, parts of 4: every mask of more than 8 elements splits."""
    monkeypatch.setattr(kt, "kernel_threads", lambda: 3)
    monkeypatch.setattr(kt, "_MIN_ROWS_PART", 4)
    monkeypatch.setattr(kr, "_KEEP_BLOCK", 6)
    calls = []
    split_ = kt._split
    monkeypatch.setattr(kt, "_split", lambda *a, **k: (calls.append(a[2]), split_(*a, **k))[1])
    return calls


@pytest.mark.parametrize("n", [0, 1, 7, 12, 13, 101, 1000])
@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.9, 1.0])
def test_the_raw_stream_on_threads(split, n, p):
    gen = np.random.Generator(np.random.PCG64(42))
    got = kr.keep_mask(gen, (n,), p)
    want, state = _serial(42, n, p)
    assert got.dtype == np.bool_ and np.array_equal(got, want)
    assert gen.bit_generator.state == state  # advanced by ceil(n / 2) outputs, whatever the split
    if n > 12:
        assert split and max(split) > 1  # the blocks really went to several threads


def test_shape_threshold_and_probability():
    gen = np.random.Generator(np.random.PCG64(3))
    got = kr.keep_mask(gen, (64, 5, 7), 0.5)
    draws = np.random.PCG64(3).random_raw(64 * 5 * 7 // 2).view(np.uint32).reshape(64, 5, 7)
    assert got.shape == (64, 5, 7) and np.array_equal(got, draws >> 31 == 1)  # p = 1/2: the top bit
    n = 1 << 20
    kept = kr.keep_mask(gen, (n,), 0.1).mean()
    assert abs(kept - 0.9) < 5 * math.sqrt(0.09 / n)


def test_another_bit_generator_gives_32_bit_integer_draws(split):
    gen, ref = np.random.Generator(np.random.MT19937(5)), np.random.Generator(np.random.MT19937(5))
    got = kr.keep_mask(gen, (5, 5), 0.3)
    want = ref.integers(0, 2**32, size=25, dtype=np.uint32).astype(np.int64) >= math.ceil(0.3 * 2**32)
    assert np.array_equal(got, want.reshape(5, 5)) and gen.random() == ref.random()


def test_dropout_draws_from_the_generator_given():
    x = ember.ones(40, 30)
    ember.manual_seed(1)
    y = F.dropout(x, 0.4, generator=ember.Generator().manual_seed(9))
    after = ember.rand(3).numpy()
    g = ember.Generator().manual_seed(9)
    want = x._backend.dropout_mask(g.numpy, (40, 30), 0.4, x.dtype)
    np.testing.assert_array_equal(y.numpy(), ember.Tensor._make(want, x._backend).numpy() * np.float32(1 / 0.6))
    ember.manual_seed(1)
    np.testing.assert_array_equal(after, ember.rand(3).numpy())  # the default generator was not used


def _model(seed):
    ember.manual_seed(seed)
    model = ember.nn.ModuleDict({"fc": ember.nn.Linear(16, 32), "out": ember.nn.Linear(32, 16)})
    return model, ember.optim.Adam(model.parameters(), lr=1e-2)


def _step(model, opt, x):
    opt.zero_grad()
    h = F.dropout(model["fc"](x), 0.3).reshape(4, 2, 15, 32)  # (120, 32): 3,840 elements, 640 blocks of 6
    a = F.scaled_dot_product_attention(h, h, h, dropout_p=0.2).reshape(120, 32)
    loss = (model["out"](a) ** 2).mean()
    loss.backward()
    opt.step()
    return loss


@pytest.mark.parametrize("threads", [1, 3])
def test_compile_replays_the_masks_eager_draws(split, monkeypatch, threads):
    monkeypatch.setattr(kt, "kernel_threads", lambda: threads)
    eager_model, eager_opt = _model(0)
    model, opt = _model(0)
    step = ember.compile(lambda x: _step(model, opt, x))
    for i in range(4):
        split.clear()
        x = ember.tensor(np.random.default_rng(i).standard_normal((120, 16)).astype(np.float32))
        ember.manual_seed(100 + i % 2)  # the same seed twice: a replay must read the generator again
        got = step(x)
        after = ember.rand(2).numpy()
        ember.manual_seed(100 + i % 2)
        want = _step(eager_model, eager_opt, x)
        assert got.detach().numpy().tobytes() == want.detach().numpy().tobytes()
        assert after.tobytes() == ember.rand(2).numpy().tobytes()  # the generator advanced by as much
    assert step.stats["replays"] >= 1
    if threads > 1 and model["fc"].weight._backend.name == "numpy":
        assert split and max(split) > 1  # the last call, a replay, drew its masks on threads
    for (name, p), q in zip(model.named_parameters(), eager_model.parameters(), strict=True):
        assert p.detach().numpy().tobytes() == q.detach().numpy().tobytes(), name
