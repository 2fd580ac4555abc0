"""``nll_loss``'s target check on the torch backend's CPU (``Backend.nll_kernel_checks_targets``): torch's kernel
raises ``IndexError`` for a target outside ``[0, C)`` itself, so Ember reads nothing back before it (no extra
kernels, no host sync, no value guard in a compiled step) and words the error only after the kernel's; every
other CPU backend checks first. The errors are the same on every backend; a compiled step on torch's CPU reports
a bad target at replay with torch's own ``IndexError``.

On torch's CUDA (``host_checks`` off; the accelerator-path run takes that path on the CPU) a bad target reaching
the kernel is a device-side assert that leaves the process's CUDA context unusable, as in PyTorch: Ember refuses a
target first only where the host knows its range without a sync (``known_range``: uploaded from host data), so
the tests of the kernel's own error run on the CPU device, and the known-range path has its own test."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import backends

torch = pytest.importorskip("torch")
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402


class _Calls(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func._schema.name)
        return func(*args, **(kwargs or {}))


def test_torch_cpu_runs_no_check_kernels_and_reads_nothing_back():
    with backends.use("torch"):
        x = ember.randn(6, 4, requires_grad=True)
        y = ember.tensor([0, 3, 1, -100, 2, 3])
        with _Calls() as calls:
            F.cross_entropy(x, y).backward()
        names = set(calls.names)
        assert "aten::_local_scalar_dense" not in names and "aten::any" not in names, names
        assert "aten::nll_loss_forward" in names
        assert backends.get("torch").nll_kernel_checks_targets
    assert not backends.get("numpy").nll_kernel_checks_targets


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("target,bad,pos", [([0, 1, 5, 2], 5, 2), ([0, -1, 1, 2], -1, 1), ([-100, 1, -7, 3], -7, 2)])
def test_bad_targets_raise_the_same_error_on_every_backend(backend, reduction, weighted, target, bad, pos):
    with backends.use(backend), ember.device("cpu"):  # (the CPU's check; on torch's CUDA: test_known_range_...)
        if not ember.zeros(1)._backend.host_checks:
            pytest.skip("the accelerator-path run: the CPU takes CUDA's path (test_known_range_of_targets_...)")
        x = ember.randn(4, 3, requires_grad=True)
        w = ember.ones(3) if weighted else None
        words = rf"nll_loss: target {bad} at position {pos} is out of range for 3 classes"
        with pytest.raises(IndexError, match=words):
            F.cross_entropy(x, ember.tensor(target), weight=w, reduction=reduction)
        ok = F.cross_entropy(x, ember.tensor([0, 2, -100, 1]), weight=w, reduction=reduction)  # still works after
        xt = torch.tensor(x.detach().numpy())
        wt = None if w is None else torch.ones(3)
        ref = torch.nn.functional.cross_entropy(xt, torch.tensor([0, 2, -100, 1]), weight=wt, reduction=reduction)
        np.testing.assert_allclose(ok.detach().numpy(), ref.numpy(), rtol=1e-6)


def _accelerator_backends():
    """torch's backends whose kernels would report a bad target on the device: the CPU's, made to take that path
    (``cheap_sync`` off, as the accelerator-path run does), and torch's CUDA where the default device is it."""
    cpu = backends.get("torch", "cpu")
    out = [cpu]
    default = ember.zeros(1)._backend
    if default.name == "torch" and default.device.type == "cuda":
        out.append(default)
    return out


_HOST_TARGETS = {  # the target as Ember got it from host data -> the bad value the known range names
    "list": (lambda: ember.tensor([0, 1, 5, 2]), 5),
    "negative": (lambda: ember.tensor([0, -1, 1, 2]), -1),
    "ignored_low_end": (lambda: ember.tensor([-100, 1, 3, 2]), 3),
    "numpy_int32_moved": (lambda: ember.from_numpy(np.array([0, 1, 2, 4], np.int32)).to(ember.get_default_device()), 4),
    "spatial": (lambda: ember.tensor(np.array([[[0, 1], [2, 7]]] * 4)), 7),  # (4, 2, 2): reshaped to (16,)
    "spatial_transposed": (lambda: ember.tensor(np.array([[[0, 1], [2, 7]]] * 4)).transpose(1, 2), 7),
}


@pytest.mark.parametrize("case", sorted(_HOST_TARGETS))
@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy", "cross_entropy_smoothed"])
def test_known_range_of_targets_from_host_data_gives_the_clear_error_without_a_sync(case, fn, monkeypatch):
    """Where the kernel would assert on the device (torch's CUDA), a target uploaded from host data is refused
    first, from the range the host remembers (``known_range``: no device read, no extra kernel), also through
    cross_entropy's reshape of a spatial target and a non-contiguous one (whose reshape is a copy)."""
    make, bad = _HOST_TARGETS[case]
    cpu = backends.get("torch", "cpu")
    monkeypatch.setattr(cpu, "_cheap_sync", False)
    loss = {"nll_loss": F.nll_loss, "cross_entropy": F.cross_entropy,
            "cross_entropy_smoothed": lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1)}[fn]  # fmt: skip
    for be in _accelerator_backends():
        assert not be.host_checks
        with backends.use("torch"), ember.device(be.device):
            target = make()
            assert target._backend is be
            x = ember.randn(4, 3, *target.shape[1:], requires_grad=True)
            with _Calls() as calls, pytest.raises(IndexError, match=rf"nll_loss: target {bad} is out of range for 3"):
                loss(x, target)
            names = set(calls.names)
            assert not names & {"aten::_local_scalar_dense", "aten::any", "aten::min", "aten::max"}, names
            assert not any("nll_loss" in n for n in names), names  # refused before the kernel
            good = target.clamp(0, 2)  # valid targets: the same loss as PyTorch's on them
            xt = torch.tensor(x.detach().cpu().numpy())
            want = torch.nn.functional.cross_entropy(xt, torch.tensor(good.cpu().numpy()).long())
            got = F.cross_entropy(x, good)
            np.testing.assert_allclose(got.detach().cpu().numpy(), want.numpy(), rtol=1e-5)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_bad_target_of_a_spatial_loss_is_named(backend):
    with backends.use(backend), ember.device("cpu"):  # (the target is written on the device: no known range)
        if not ember.zeros(1)._backend.host_checks:
            pytest.skip("the accelerator-path run: on CUDA this target would reach the kernel (a device assert)")
        x = ember.randn(2, 3, 4, 5)
        t = ember.zeros(2, 4, 5, dtype=ember.int64)
        t[1, 2, 3] = 9
        with pytest.raises(IndexError, match="target 9 at position 33 is out of range for 3 classes"):
            F.nll_loss(x, t)


def test_compiled_step_on_torch_has_no_target_guard_and_stays_bit_identical():
    with backends.use("torch"), ember.device("cpu"):  # (torch's CPU kernel raises where CUDA's would assert)
        ember.manual_seed(0)
        m = ember.nn.Linear(4, 3)
        opt = ember.optim.SGD(m.parameters(), lr=0.1)
        x, y = ember.randn(5, 4), ember.tensor([0, 1, 2, 1, 0])

        def step():
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            return loss

        compiled = ember.compile(step)
        for _ in range(3):
            compiled()
        source = compiled.cache[0].program.source
        assert "MISS" not in source  # no value guard: nothing read back
        before = [p.detach().clone() for p in m.parameters()]
        y.copy_(ember.tensor([2, 2, 0, 1, 1]))  # other valid targets: the same program, the same bits as eager
        got = compiled()
        grads = [p.grad.clone() for p in m.parameters()]
        assert compiled.stats["captures"] == 1
        with ember.no_grad():
            for p, b in zip(m.parameters(), before, strict=True):
                p.copy_(b)
        want = step()
        assert torch.equal(got._data, want._data)
        for p, g in zip(m.parameters(), grads, strict=True):
            assert torch.equal(p.grad._data, g._data)
        if not y._backend.host_checks:
            return  # the accelerator-path run: on CUDA the kernel's device-side assert, which no test may fire
        y[2] = 7
        with pytest.raises(IndexError, match="Target 7 is out of bounds"):  # torch's kernel, at replay
            compiled()
