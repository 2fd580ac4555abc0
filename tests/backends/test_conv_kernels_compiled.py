"""LeNet-5 at full size (28x28, float32) through ``ember.compile``: the NumPy fast paths of its kernels (2x2
max-pool planes and positions, ReLU against a zero row, the convolution layouts) replay bit for bit as eager."""

import copy

import numpy as np

import ember
import ember.nn.functional as F
from ember.backends._kernels_pool import PairIndex


def _bits(t):
    return np.ascontiguousarray(t.detach().numpy()).tobytes()


def _assert_compiled_equals_eager(m1, loss_of, batches):
    """Train ``m1`` eagerly and a copy of it through ``ember.compile`` (SGD with momentum), ``loss_of(m, *batch)``
    per step: losses and parameters bit for bit equal after each step, and the compiled step replayed."""
    m2 = copy.deepcopy(m1)
    o1, o2 = (ember.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (m1, m2))

    def make(m, o):
        def step(*batch):
            o.zero_grad()
            loss = loss_of(m, *batch)
            loss.backward()
            o.step()
            return loss

        return step

    eager, compiled = make(m1, o1), ember.compile(make(m2, o2))
    for i, batch in enumerate(batches):
        batch = tuple(ember.tensor(a) for a in batch)
        assert _bits(eager(*batch)) == _bits(compiled(*batch)), i
        assert [_bits(p) for p in m1.parameters()] == [_bits(p) for p in m2.parameters()], i
    assert compiled.stats["replays"] >= 2


def test_lenet5_full_size_compiled_equals_eager(monkeypatch):
    seen = []
    import ember.backends._kernels_pool as kp

    real = kp._max_pool_pairs
    monkeypatch.setattr(kp, "_max_pool_pairs", lambda *a: seen.append(1) or real(*a))
    ember.manual_seed(0)
    m1 = ember.models.LeNet5Config().init()
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((8, 1, 28, 28)).astype(np.float32), rng.integers(0, 10, 8)) for _ in range(5)]
    _assert_compiled_equals_eager(m1, lambda m, x, y: F.cross_entropy(m(x), y), batches)
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


def test_conv_stack_with_f4_compiled_equals_eager(monkeypatch):
    # Winograd F(4x4, 3x3) (_kernels_winograd4) with batch norm and ReLU
    import ember.backends._kernels_winograd4 as kw4

    seen = []
    real = kw4.Winograd4Kernels.wino4_conv
    monkeypatch.setattr(kw4.Winograd4Kernels, "wino4_conv", lambda *a: seen.append(1) or real(*a))
    ember.manual_seed(0)
    m1 = ember.nn.Sequential(
        ember.nn.Conv2d(16, 16, 3, padding=1, bias=True), ember.nn.BatchNorm2d(16), ember.nn.ReLU()
    )
    data = np.random.default_rng(0).standard_normal((5, 4, 16, 32, 32)).astype(np.float32)
    # On a GPU two eager runs of this step differ already in their last bits (cuDNN's weight gradient sums with
    # atomics, its algorithm picked per call): bit for bit holds, eager with eager as compiled with eager, under
    # deterministic algorithms, as in PyTorch (docs/architecture.md, "Checked replay"). On the CPU: as they are.
    gpu = next(m1.parameters()).device.type != "cpu"
    was, warn = ember.are_deterministic_algorithms_enabled(), ember.is_deterministic_algorithms_warn_only_enabled()
    ember.use_deterministic_algorithms(gpu or was, warn_only=warn)
    try:
        _assert_compiled_equals_eager(m1, lambda m, x: (m(x) * m(x)).mean(), [(d,) for d in data])
    finally:
        ember.use_deterministic_algorithms(was, warn_only=warn)
    if next(m1.parameters())._backend.name == "numpy":
        assert seen  # the F(4x4, 3x3) path ran
