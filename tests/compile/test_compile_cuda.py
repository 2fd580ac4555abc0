"""CUDA graphs for captured programs on torch-CUDA (skipped without a CUDA device)."""

from __future__ import annotations

import pytest

import ember
import ember.nn as nn

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_eval_forward_is_replayed_through_a_cuda_graph() -> None:
    dev = ember.backends.get("torch", "cuda")
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(dev.device).eval()
    cm = ember.compile(model)
    with ember.no_grad():
        for _ in range(4):
            x = ember.randn(3, 8).to(dev.device)
            assert ember.equal(cm(x), model(x))
    from ember._compile._cuda_graph import CudaGraphProgram

    assert isinstance(cm._compiled.cache[0].program, CudaGraphProgram)


def test_a_convolutional_training_step_is_checked_and_graphed() -> None:
    """cuDNN's convolution backward sums with atomics, so two eager runs differ in their last bits: until session
    10 the checked replay refused such steps (LeNet-5 and ResNet-18 ran eagerly on an H100, without a graph)."""
    from ember._compile._cuda_graph import CudaGraphProgram
    from ember.models import LeNet5Config

    ember.manual_seed(0)
    model = LeNet5Config().init(device="cuda")
    opt = ember.optim.SGD(model.parameters(), lr=0.01)
    x, y = ember.randn(64, 1, 28, 28, device="cuda"), ember.randint(0, 10, (64,), device="cuda")

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    compiled = ember.compile(step)
    losses = [float(compiled(x, y)) for _ in range(8)]
    assert not compiled.eager, compiled.reason
    assert any(isinstance(e.program, CudaGraphProgram) for e in compiled.cache), compiled.graph_skips
    assert compiled.stats["replays"] >= 6 and losses[-1] < losses[0]
