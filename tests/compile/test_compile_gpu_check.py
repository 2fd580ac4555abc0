"""The checked replay on a GPU, where two eager runs of one step differ in their last bits (cuDNN's convolution
backward and other kernels sum with atomics): the check runs both sides on torch's deterministic kernels, and a
kernel without a deterministic form is allowed the rounding of reordered sums, never more. The H100 run of
session 10 found LeNet-5's and ResNet-18's steps refused for this ("its replay differed from eager"). On the CPU
the GPU is stood in for by a dispatch mode that rounds matrix products the other way on every other call."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember._compile import _api
from ember._compile._verify import _close, atomics_may_differ, deterministic_kernels

torch = pytest.importorskip("torch")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

_PRODUCTS = {torch.ops.aten.mm.default, torch.ops.aten.addmm.default}


class _Atomics(TorchDispatchMode):
    """Every other float32 product comes out one unit in the last place higher, as a reordered sum may;
    ``deterministic_only=True``: only while torch's deterministic switch is off (a kernel like cuDNN's, which
    has a deterministic form)."""

    def __init__(self, deterministic_only: bool = False) -> None:
        super().__init__()
        self.calls, self.deterministic_only = 0, deterministic_only

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in _PRODUCTS and out.dtype == torch.float32:
            if self.deterministic_only and torch.are_deterministic_algorithms_enabled():
                return out
            self.calls += 1
            if self.calls % 2:
                out = torch.nextafter(out, torch.full_like(out, float("inf")))
        return out


def _make(opt_kind):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4))
    opt = (ember.optim.Adam if opt_kind == "adam" else ember.optim.SGD)(model.parameters(), lr=1e-3)
    return model, opt


def _step(model, opt, x, y):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def _run(monkeypatch, gpu, mode, opt_kind="sgd", calls=5):
    monkeypatch.setattr(_api, "atomics_may_differ", lambda arrays: gpu)
    with ember.device("cpu"), ember.backends.use("torch"):
        model, opt = _make(opt_kind)
        compiled = ember.compile(lambda x, y: _step(model, opt, x, y))
        ember.manual_seed(1)
        batches = [(ember.randn(16, 8), ember.randint(0, 4, (16,))) for _ in range(calls)]
        with mode:
            losses = [float(compiled(x, y)) for x, y in batches]
    return compiled, losses


@pytest.mark.parametrize("opt_kind", ["sgd", "adam"])
def test_a_step_whose_products_round_either_way_replays_on_a_gpu(monkeypatch, opt_kind):
    compiled, losses = _run(monkeypatch, True, _Atomics(), opt_kind)
    assert not compiled.eager, compiled.reason
    assert compiled.stats["replays"] == 3 and compiled.stats["verified_within_rounding"] > 0
    assert np.all(np.isfinite(losses))


def test_on_the_cpu_the_same_difference_is_refused(monkeypatch):
    with pytest.warns(UserWarning, match="replay differed from eager"):
        compiled, _ = _run(monkeypatch, False, _Atomics())
    assert compiled.eager


def test_a_kernel_with_a_deterministic_form_is_checked_bit_for_bit(monkeypatch):
    atomics = _Atomics(deterministic_only=True)
    compiled, _ = _run(monkeypatch, True, atomics)
    assert not compiled.eager and compiled.stats["verified_within_rounding"] == 0
    assert atomics.calls > 0  # the capture and the replays took the nondeterministic kernels
    assert not torch.are_deterministic_algorithms_enabled()  # the switch is put back


def test_the_switch_is_on_only_for_the_check_and_put_back():
    assert not torch.are_deterministic_algorithms_enabled()
    with deterministic_kernels(True):
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
    assert not torch.are_deterministic_algorithms_enabled()
    with deterministic_kernels(False):
        assert not torch.are_deterministic_algorithms_enabled()


def test_only_gpu_arrays_outside_deterministic_mode_may_differ():
    class Cuda:
        is_cuda = True

    assert not atomics_may_differ([np.zeros(2), torch.zeros(2)])
    assert atomics_may_differ([np.zeros(2), Cuda()])
    ember.use_deterministic_algorithms(True)
    try:
        assert not atomics_may_differ([Cuda()])
    finally:
        ember.use_deterministic_algorithms(False)


def test_the_rounding_allowed_is_the_changes_not_the_values():
    before = torch.full((1000,), 0.5)
    step = torch.linspace(-1e-4, 1e-4, 1000)
    after = before + step
    # what reordered sums do: the change is off in its last bits; the value then rounds either way
    assert _close(after, before + step * (1 + 2e-7), before)
    # a step taken with a learning rate 10% off, or not at all, is far below 1e-3 of the values: still refused
    assert torch.allclose(after, before + 0.9 * step, rtol=1e-3)
    assert not _close(after, before + 0.9 * step, before)
    assert not _close(after, before.clone(), before)
    # NaN where the other has a number, another dtype: refused; integers: bit for bit
    nan = after.clone()
    nan[3] = float("nan")
    assert not _close(after, nan, before) and _close(nan, nan.clone(), before)
    assert not _close(after, after.double(), before)
    assert _close(torch.arange(4), torch.arange(4)) and not _close(torch.arange(4), torch.arange(1, 5))
    # NumPy arrays (CuPy's take the same path through the host)
    assert _close(after.numpy(), (before + step * (1 + 2e-7)).numpy(), before.numpy())
    assert not _close(after.numpy(), (before + 0.9 * step).numpy(), before.numpy())
