"""Backends as their own axis: selection, availability, moves between backends and devices, errors.

The rest of the suite runs unchanged under every backend (``EMBER_BACKEND=torch make test`` runs it on
torch); these tests mix backends in one process. CUDA tests skip cleanly without a GPU.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

import ember
from ember import backends
from ember._errors import DeviceError

torch = pytest.importorskip("torch")

CUDA = backends.available()["torch"].devices.count("cuda:0") > 0 or bool(backends.available()["cupy"])
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device on this machine")


@pytest.fixture(autouse=True)
def _cpu_default() -> Iterator[None]:
    """These tests are about the backends serving the CPU: the CPU is their default device, also where the suite
    runs with the default device cuda (make test-cuda); the CUDA tests name cuda."""
    with ember.device("cpu"):
        yield


def _on(name: str, *args: object, **kw: object) -> ember.Tensor:
    with backends.use(name):
        return ember.tensor(*args, **kw)  # type: ignore[arg-type]


@pytest.mark.process_default
def test_use_selects_and_restores() -> None:
    before = backends.current()
    with backends.use("torch"):
        assert backends.current() == "torch"
        x = ember.ones(3)
        assert isinstance(x._data, torch.Tensor) and x._backend.name == "torch"
        assert x.device == "cpu" and x.device.backend == "torch"
    assert backends.current() == before
    assert ember.ones(3)._backend.name == before


def _env(**env: str) -> dict[str, str]:
    """A bare environment importing this checkout's Ember (not whichever one the venv has installed)."""
    return {"PATH": "", "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[1] / "src"), **env}


def test_env_var_selects_at_import() -> None:
    code = "import ember; print(ember.backends.current(), type(ember.ones(2)._data).__module__)"
    out = subprocess.run([sys.executable, "-c", code], env=_env(EMBER_BACKEND="torch"), capture_output=True, text=True)
    assert out.stdout.split() == ["torch", "torch"], out.stderr


def test_env_var_unknown_backend_fails_at_first_use_with_the_choices() -> None:
    code = "import ember\nprint('imported', flush=True)\nember.ones(2)"  # import works; the first tensor says why not
    out = subprocess.run([sys.executable, "-c", code], env=_env(EMBER_BACKEND="jax"), capture_output=True, text=True)
    assert out.stdout.split() == ["imported"], out.stderr
    assert out.returncode != 0 and "unknown backend 'jax'" in out.stderr and "numpy" in out.stderr


def test_available_says_why() -> None:
    av = backends.available()
    assert av["numpy"] and av["numpy"].devices == ("cpu",)
    assert av["torch"] and "cpu" in av["torch"].devices
    if not av["cupy"]:
        assert av["cupy"].reason  # a reason, not just False
    if not CUDA:
        assert "cuda" in av["torch"].reason.lower()


def test_unavailable_device_lists_what_works() -> None:
    if CUDA:
        pytest.skip("this machine has CUDA")
    with pytest.raises(DeviceError) as e:
        ember.zeros(2, device="cuda")
    msg = str(e.value)
    assert "cuda:0" in msg and "numpy (cpu)" in msg and "torch" in msg
    with pytest.raises(RuntimeError):  # PyTorch code catches RuntimeError
        ember.ones(2).cuda()


def test_unavailable_backend_names_install() -> None:
    if backends.available()["cupy"]:
        pytest.skip("cupy works here")
    with pytest.raises(DeviceError, match="cupy"):
        backends.use("cupy")


def test_mixed_backends_in_one_op_name_both_and_the_fix() -> None:
    a = _on("numpy", [1.0, 2.0])
    b = _on("torch", [1.0, 2.0])
    with pytest.raises(DeviceError) as e:
        a + b
    msg = str(e.value)
    assert "numpy" in msg and "torch" in msg and ".to(" in msg


def test_to_round_trip_between_backends_keeps_values_dtype_and_grad() -> None:
    x = _on("numpy", [[1.5, -2.0], [3.0, 0.25]], dtype=ember.float64, requires_grad=True)
    t = x.to(backends.get("torch"))
    assert t._backend.name == "torch" and t.dtype == ember.float64
    back = t.to(x.device)
    assert back._backend is x._backend and back.tolist() == x.tolist()
    (t * t).sum().backward()  # the gradient flows back across the move
    assert x.grad is not None and x.grad._backend is x._backend
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_move_does_not_share_memory() -> None:
    x = _on("numpy", [1.0, 2.0])
    t = x.to(backends.get("torch"))
    t.add_(1.0)
    assert x.tolist() == [1.0, 2.0]


def test_device_of_a_tensor_keeps_its_backend() -> None:
    t = _on("torch", [1.0, 2.0])
    z = ember.zeros(2, device=t.device)  # selection is numpy here; t.device still says torch
    assert z._backend is t._backend
    assert ember.device("cpu") == t.device and str(t.device) == "cpu"


def test_device_objects_accepted_everywhere() -> None:
    d = ember.device("cpu")
    assert ember.ones(2, device=d).device == "cpu"
    assert ember.ones(2).to(d).device == "cpu"
    assert ember.ones(2, device=torch.device("cpu")).device == "cpu"
    assert not ember.ones(2).is_cuda and ember.ones(2).get_device() == -1


def test_bfloat16_on_torch_and_numpy_and_moves_between_them_exactly() -> None:
    t = _on("torch", [1.0, 2.5, 1.00390625], dtype=ember.bfloat16)
    assert t.dtype == ember.bfloat16 and (t * 2).tolist() == [2.0, 5.0, 2.0]
    h = _on("torch", [1.0, 2.5], dtype=ember.float16)
    assert (h + h).dtype == ember.float16
    n = _on("numpy", [1.0, 2.5, 1.00390625], dtype=ember.bfloat16)  # ml_dtypes' bfloat16 (1 + 2**-8 rounds to 1)
    assert n.dtype is ember.bfloat16 and (n * 2).tolist() == [2.0, 5.0, 2.0]
    moved = t.to(backends.get("numpy"))
    assert moved._backend.name == "numpy" and moved.dtype is ember.bfloat16 and moved.tolist() == t.tolist()
    back = moved.to(backends.get("torch"))
    assert back._backend.name == "torch" and back.dtype is ember.bfloat16 and back.tolist() == t.tolist()


def test_optimizer_state_follows_its_parameter_across_backends() -> None:
    with backends.use("numpy"):
        lin = ember.nn.Linear(3, 2)
    opt = ember.optim.Adam(lin.parameters(), lr=0.1)
    x = ember.ones(4, 3, device=lin.weight.device)
    lin(x).sum().backward()
    opt.step()
    lin.to(backends.get("torch"))
    opt.zero_grad()
    lin(x.to(lin.weight.device)).sum().backward()
    opt.step()
    for p in lin.parameters():
        assert p._backend.name == "torch"
        st = opt.state[p.id]
        assert isinstance(st["exp_avg"], torch.Tensor) and st["step"] == 2


def test_optimizer_state_dict_loads_onto_another_backend() -> None:
    with backends.use("numpy"):
        a = ember.nn.Linear(2, 2)
    opt = ember.optim.SGD(a.parameters(), lr=0.1, momentum=0.9)
    a(ember.ones(1, 2, device=a.weight.device)).sum().backward()
    opt.step()
    sd = opt.state_dict()
    with backends.use("torch"):
        b = ember.nn.Linear(2, 2)
    b.load_state_dict(a.state_dict())
    opt2 = ember.optim.SGD(b.parameters(), lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    buf = opt2.state[b.weight.id]["momentum_buffer"]
    assert isinstance(buf, torch.Tensor)
    np.testing.assert_allclose(buf.numpy(), opt.state[a.weight.id]["momentum_buffer"])


def test_records_load_onto_any_backend(tmp_path: pytest.TempPathFactory) -> None:
    with backends.use("numpy"):
        a = ember.nn.Linear(3, 2)
    path = tmp_path / "m.mpk"  # type: ignore[operator]
    ember.record.save(a, path) if hasattr(ember.record, "save") else a.save(path)
    with backends.use("torch"):
        b = ember.nn.Linear(3, 2)
        b.load(path) if hasattr(b, "load") else ember.record.load_into(b, path)
    assert b.weight._backend.name == "torch"
    np.testing.assert_allclose(b.weight.detach().numpy(), a.weight.detach().numpy())


def test_accelerator_and_cuda_namespaces_answer_truthfully() -> None:
    assert ember.cuda.is_available() == bool(CUDA)
    assert ember.cuda.device_count() == (torch.cuda.device_count() if CUDA else 0)
    assert ember.accelerator.is_available() == bool(CUDA)
    assert (ember.accelerator.current_accelerator() is None) == (not CUDA)
    assert ember.backends.cudnn.is_available() == (CUDA and torch.backends.cudnn.is_available())
    assert ember.backends.mps.is_available() is False
    ember.cuda.manual_seed(3)
    ember.cuda.manual_seed_all(3)
    ember.cuda.synchronize() if CUDA else None


def test_host_sync_free_paths_give_the_same_answers() -> None:
    """The accelerator code paths (no value read back) run on torch-CPU with the sync flag forced off."""
    be = backends.get("torch")
    be._cheap_sync = False
    try:
        with backends.use("torch"):
            p = ember.tensor([3.0, 4.0], requires_grad=True)
            p.grad = ember.tensor([30.0, 40.0])
            total = ember.nn.utils.clip_grad_norm_([p], 5.0)
            assert abs(total.item() - 50.0) < 1e-4
            np.testing.assert_allclose(p.grad.numpy(), [3.0, 4.0], rtol=1e-5)
            logits = ember.tensor([[1.0, 2.0, 0.5], [0.1, 0.2, 3.0]], requires_grad=True)
            target = ember.tensor([1, -100])
            loss = ember.nn.functional.cross_entropy(logits, target, ignore_index=-100)
            ref = ember.nn.functional.log_softmax(logits.detach(), 1)[0, 1].neg()
            assert abs(loss.item() - ref.item()) < 1e-6
            emb = ember.nn.functional.embedding(ember.tensor([0, 2]), ember.eye(3))
            assert emb.tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    finally:
        be._cheap_sync = None


def test_gradcheck_on_torch_backend_with_views() -> None:
    with backends.use("torch"):
        x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
        assert ember.autograd.gradcheck(lambda a: (a[1:] * a[:-1]).tanh().sum(0), [x])


@needs_cuda
def test_cuda_round_trip_and_ops() -> None:
    x = ember.randn(4, 3, requires_grad=True)
    y = x.cuda()
    assert y.is_cuda and y.device == "cuda:0"
    (y * 2).sum().backward()
    assert x.grad is not None and not x.grad.is_cuda
    assert y.cpu().tolist() == x.tolist()


@needs_cuda
def test_pinned_non_blocking_copy() -> None:
    x = ember.randn(8).pin_memory()
    assert x.is_pinned()
    y = x.to("cuda", non_blocking=True)
    ember.cuda.synchronize()
    assert y.cpu().tolist() == x.tolist()
