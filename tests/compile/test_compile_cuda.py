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
