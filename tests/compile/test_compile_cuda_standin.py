"""``_compile/_cuda_graph.py`` run on torch-CPU through a stand-in for ``torch.cuda``'s graphs
(``cuda_graph_standin.py``: capture launches nothing, replay reruns the captured kernels on the same memory with
their Python values baked in). Nothing here ran on a GPU; ``test_compile_cuda.py`` is the same check on CUDA."""

from __future__ import annotations

import pytest

import ember
import ember.nn as nn

torch = pytest.importorskip("torch")

from ember._compile._cuda_graph import CudaGraphProgram  # noqa: E402

from .cuda_graph_standin import install  # noqa: E402


@pytest.fixture
def graphs(monkeypatch):
    with ember.backends.use("torch"):
        yield install(monkeypatch)


def test_eval_forward_is_replayed_through_the_graph(graphs):
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    cm = ember.compile(model)
    with ember.no_grad():
        for _ in range(5):
            x = ember.randn(3, 8)
            assert ember.equal(cm(x), model(x))
        assert isinstance(cm._compiled.cache[0].program, CudaGraphProgram)
        assert len(graphs) == 1 and graphs[0].replays == 3  # calls 3-5 (1: recorded, 2: checked replay)
        with ember.no_grad():  # the graph reads the parameters' memory: an in-place change is seen
            model[0].weight.mul_(0.5)
        x = ember.randn(3, 8)
        assert ember.equal(cm(x), model(x)) and graphs[0].replays == 4
        out = cm(x)
        cm(ember.randn(3, 8))
        assert ember.equal(out, model(x))  # a result is a copy, not the graph's memory

