"""Tests that need a CUDA device (run by ``make test-cuda``; skipped here without one): streams, pinned
copies, non_blocking transfers, device-side random numbers, synchronize, memory statistics and events, and
mixed precision on the GPU, for each backend that serves CUDA."""

import numpy as np
import pytest

import ember
from ember import backends

CUDA_BACKENDS = [n for n, s in backends.available().items() if any(d.startswith("cuda") for d in s.devices)]
pytestmark = pytest.mark.skipif(not CUDA_BACKENDS, reason="needs a CUDA device (run make test-cuda on a GPU machine)")


@pytest.fixture(params=CUDA_BACKENDS or ["none"])
def dev(request):
    return backends.get(request.param, "cuda").device


def test_side_stream_gives_the_same_result_and_waits(dev):
    x = ember.randn(256, 256, device=dev)
    expected = (x @ x).tanh().sum(0).numpy()
    s = ember.cuda.Stream(dev)
    s.wait_stream(ember.cuda.current_stream(dev))
    with ember.cuda.stream(s):
        y = (x @ x).tanh().sum(0)
    ember.cuda.current_stream(dev).wait_stream(s)
    s.synchronize()
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_pinned_non_blocking_copies_round_trip(dev):
    host = ember.randn(1000, device="cpu")  # (the suite's default device is cuda)
    pinned = host.pin_memory()
    assert pinned.is_pinned() and not host.is_pinned()
    on_gpu = pinned.to(dev, non_blocking=True)
    back = on_gpu.to("cpu", non_blocking=True)
    ember.cuda.synchronize()
    assert on_gpu.device.type == "cuda"
    np.testing.assert_array_equal(back.numpy(), host.numpy())
    with pytest.raises(RuntimeError, match="only CPU tensors can be pinned"):  # as in PyTorch
        on_gpu.pin_memory()


def test_device_side_random_numbers_are_seeded_and_stay_on_the_device(dev):
    ember.manual_seed(3)
    a = ember.randn(10_000, device=dev)
    ember.manual_seed(3)
    b = ember.randn(10_000, device=dev)
    assert a.device.type == "cuda" and np.array_equal(a.numpy(), b.numpy())
    m, s = float(a.mean()), float(a.std())
    assert abs(m) < 0.05 and abs(s - 1) < 0.05
    u = ember.rand(10_000, device=dev)
    assert float(u.min()) >= 0 and float(u.max()) < 1


def test_memory_statistics_and_event_timing(dev):
    ember.cuda.synchronize(dev)
    ember.cuda.reset_peak_memory_stats(dev)
    before = ember.cuda.memory_allocated(dev)
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    start.record()
    big = ember.zeros(64, 1024, 1024, device=dev)  # 256 MiB
    y = big + 1
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) > 0
    assert ember.cuda.memory_allocated(dev) >= before + 2 * big.nbytes
    assert ember.cuda.max_memory_allocated(dev) >= ember.cuda.memory_allocated(dev)
    assert ember.cuda.memory_reserved(dev) >= ember.cuda.memory_allocated(dev)
    free, total = ember.cuda.mem_get_info(dev)
    assert 0 < free <= total
    del big, y
    ember.cuda.empty_cache()


def test_default_device_cuda_places_factories_and_layers(dev):
    with ember.device("cpu"):
        with ember.device(dev):
            assert ember.zeros(2).device.type == "cuda"
            assert ember.nn.Linear(2, 3).weight.device.type == "cuda"
            assert ember.tensor([1.0]).device.type == "cuda"
        assert ember.zeros(2).device.type == "cpu"  # the enclosing default again


def test_float16_autocast_and_grad_scaler_on_the_gpu(dev):
    if dev.backend == "cupy":
        pytest.skip("CuPy has float16; autocast runs, but this test follows PyTorch's recipe on torch only")
    model = ember.nn.Sequential(ember.nn.Linear(32, 64), ember.nn.ReLU(), ember.nn.Linear(64, 4)).to(dev)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cuda")
    x, y = ember.randn(16, 32, device=dev), ember.randint(0, 4, (16,), device=dev)
    losses = []
    for _ in range(20):
        with ember.autocast("cuda"):
            out = model(x)
            loss = ember.nn.functional.cross_entropy(out, y)
        assert out.dtype is ember.float16 and loss.dtype is ember.float32
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert {p.dtype for p in model.parameters()} == {ember.float32}
