"""docs/architecture.md "Adding a backend", re-checked: a throwaway backend (NumPy under a new name, serving the
``cuda`` device type) is registered with its capabilities and runs a slice of the conformance suite."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import ember
from ember import backends
from ember._device import device
from ember.backends import NumpyBackend
from ember.testing import check_op

from ..ops.test_core_ops import CASES


class ThrowawayBackend(NumpyBackend):
    """NumPy's arrays, presented as a CUDA device (host memory: only the name and the device differ)."""

    name = "throwaway"
    device_types = ("cuda",)

    def __init__(self, dev: Any) -> None:
        super().__init__()
        self.device = device(dev).served_by("throwaway")


@pytest.fixture
def throwaway() -> Iterator[None]:
    saved = dict(backends._REGISTRY), dict(backends._CACHE), dict(backends._SELECTED)
    backends.register_backend(
        "throwaway", ThrowawayBackend, ("cuda",), "nothing", device_count=lambda t: 1 if t == "cuda" else 0,
        cuda_rank=-1,  # tried before torch and CuPy for ember.device("cuda")
    )  # fmt: skip
    backends._SELECTED.pop("cuda", None)  # no choice made (make test-cuda chooses one with EMBER_BACKEND)
    try:
        with ember.device("cpu"):  # the default device stays the CPU (make test-cuda makes it cuda)
            yield
    finally:
        for d, s in zip((backends._REGISTRY, backends._CACHE, backends._SELECTED), saved, strict=True):
            d.clear()
            d.update(s)  # type: ignore[arg-type]


def test_capabilities_come_from_the_registration(throwaway: None) -> None:
    assert backends.cuda_servers()[0] == "throwaway"
    assert backends.available()["throwaway"].devices == ("cuda:0",)
    assert backends.current("cuda") == "throwaway"
    assert ember.cuda.is_available() and ember.cuda.device_count() == 1
    assert ember.cuda.get_device_name() == "throwaway cuda:0"
    t = ember.ones(2, device="cuda")
    assert t._backend.name == "throwaway" and str(t.device) == "cuda:0"
    assert ember.ones(2).device.type == "cpu"  # the default device keeps its backend


def _on_cuda(fn: Any) -> Any:
    def run(*args: Any) -> Any:
        moved = [a.to("cuda") if isinstance(a, ember.Tensor) else a for a in args]
        out = fn(*moved)
        for o in out if isinstance(out, tuple) else (out,):
            assert o._backend.name == "throwaway", o._backend
        return out

    return run


@pytest.mark.parametrize("name,fn,tfn,args", CASES[:12] + CASES[14:20], ids=[c[0] for c in CASES[:12] + CASES[14:20]])
def test_conformance_slice_runs_on_the_new_backend(throwaway: None, name: str, fn: Any, tfn: Any, args: Any) -> None:
    check_op(_on_cuda(fn), *args, torch_fn=tfn, name=name)


def test_training_step_on_the_new_backend(throwaway: None) -> None:
    ember.manual_seed(0)
    model = ember.nn.Linear(3, 2).to("cuda")
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    x = ember.tensor(np.ones((4, 3), np.float32), device="cuda")
    loss = (model(x) ** 2).mean()
    loss.backward()
    opt.step()
    assert model.weight._backend.name == "throwaway" and model.weight.grad is not None
