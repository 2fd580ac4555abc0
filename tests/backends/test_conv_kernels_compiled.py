"""LeNet-5 at full size (28x28, float32) through ``ember.compile``: the NumPy fast paths of its kernels (2x2
max-pool planes and positions, ReLU against a zero row, the convolution layouts) replay bit for bit as eager."""

import copy

import numpy as np

import ember
import ember.nn.functional as F
from ember.backends._kernels_pool import PairIndex


def _bits(t):
    return np.ascontiguousarray(t.detach().numpy()).tobytes()


def test_lenet5_full_size_compiled_equals_eager(monkeypatch):
    seen = []
    import ember.backends._kernels_pool as kp

    real = kp._max_pool_pairs
    monkeypatch.setattr(kp, "_max_pool_pairs", lambda *a: seen.append(1) or real(*a))
    ember.manual_seed(0)
    m1 = ember.models.LeNet5Config().init()
    m2 = copy.deepcopy(m1)
    o1, o2 = (ember.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (m1, m2))

    def make(m, o):
        def step(x, y):
            o.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            o.step()
            return loss

        return step

    eager, compiled = make(m1, o1), ember.compile(make(m2, o2))
    rng = np.random.default_rng(0)
    for i in range(5):
        x = ember.tensor(rng.standard_normal((8, 1, 28, 28)).astype(np.float32))
        y = ember.tensor(rng.integers(0, 10, 8))
        assert _bits(eager(x, y)) == _bits(compiled(x, y)), i
        assert [_bits(p) for p in m1.parameters()] == [_bits(p) for p in m2.parameters()], i
    assert compiled.stats["replays"] >= 2
    # the 2x2 path is NumPy's (_pairs_ok): asked of the backend the model ran on, not backends.current(), which
    # names the CPU's (numpy also when the default device is cuda on cupy, or torch-CPU in the fake-device run)
    if next(m1.parameters())._backend.name == "numpy":
        assert seen  # the 2x2 path ran
    else:
        assert not seen  # another backend's own max-pool
        x = np.random.default_rng(1).standard_normal((2, 3, 4, 4))
        assert isinstance(ember.backends.get("numpy").max_pool(x, (2, 2), (2, 2), (0, 0), (1, 1), False, True)[1],
                          PairIndex)  # fmt: skip


def test_pool_nan_after_capture_recaptures_and_equals_eager():
    # the 2x2 path reads "a NaN in the output?" on the host: a replay must notice the change, not reuse positions
    def step(x):
        y = F.max_pool2d(x, 2)
        (y * y).sum().backward()
        return y

    compiled = ember.compile(step)
    rng = np.random.default_rng(2)
    for i in range(5):
        a = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
        if i == 3:
            a[1, 2, 3, 4] = np.nan
        xe, xc = ember.tensor(a, requires_grad=True), ember.tensor(a, requires_grad=True)
        ye, yc = step(xe), compiled(xc)
        assert _bits(ye) == _bits(yc), i
        assert _bits(xe.grad) == _bits(xc.grad), i
    if xe._backend.name == "numpy":  # (the backend it ran on: backends.current() names the CPU's)
        assert compiled.stats["captures"] == 2 and compiled.stats["replays"] >= 2
