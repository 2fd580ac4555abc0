"""Training in bfloat16 against PyTorch 2.13 (CPU): a model's steps with each optimizer on bfloat16 parameters,
records and files keeping bfloat16 bit for bit (Ember's records, safetensors' BF16, torch.save), and
``ember.compile``'s replay of a bfloat16 step equal to eager bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
import ember.nn as enn

from ._parity import compare, get_torch

rng = np.random.default_rng(11)
X, Y = rng.standard_normal((16, 6)).astype(np.float32), rng.integers(0, 3, 16)
W1, B1 = rng.standard_normal((8, 6)).astype(np.float32) * 0.4, rng.standard_normal(8).astype(np.float32) * 0.1
W2, B2 = rng.standard_normal((3, 8)).astype(np.float32) * 0.4, rng.standard_normal(3).astype(np.float32) * 0.1


def _model(L: Any) -> Any:
    m = L.nn.Sequential(L.nn.Linear(6, 8), L.nn.Tanh(), L.nn.Linear(8, 3))
    with L.no_grad():
        for p, v in zip(m.parameters(), (W1, B1, W2, B2), strict=True):
            p.copy_(L.tensor(v))
    return m.bfloat16()


OPTIMIZERS = {
    "SGD": lambda L, ps: L.optim.SGD(ps, lr=0.1),
    "SGD_momentum_wd": lambda L, ps: L.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-2, nesterov=True),
    "Adam": lambda L, ps: L.optim.Adam(ps, lr=1e-2),
    "AdamW": lambda L, ps: L.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
    "RMSprop": lambda L, ps: L.optim.RMSprop(ps, lr=1e-2),
    "Adagrad": lambda L, ps: L.optim.Adagrad(ps, lr=1e-1),
}
#: after 4 steps, relative to the largest magnitude: the gradients differ by a unit here and there (backward
#: formulas PyTorch composes of several bfloat16 ops, tests/bf16/test_bf16_ops.py), and PyTorch's single-tensor
#: optimizers round after each of their in-place steps where Ember's kernels may round once
TOL = dict.fromkeys(OPTIMIZERS, 2**-6)
#: Ember's torch backend runs Adam/AdamW as torch's fused kernels (float32 math, one rounding per step): four units
#: at the largest magnitude after 4 steps against PyTorch's single-tensor loop
TOL_TORCH_BACKEND = {"Adam": 2**-5, "AdamW": 2**-5}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_training_steps_on_bfloat16_parameters_follow_torch(name: str) -> None:
    torch = get_torch()
    out = {}
    for L in (ember, torch):
        m = _model(L)
        opt = OPTIMIZERS[name](L, m.parameters())
        x, y = L.tensor(X).bfloat16(), L.tensor(Y)
        losses, first_grads = [], []
        for _ in range(4):
            opt.zero_grad()
            loss = L.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            first_grads = first_grads or [p.grad.clone() for p in m.parameters()]
            opt.step()
            losses.append(loss)
        out[L.__name__] = (losses, first_grads, list(m.parameters()))
    (ours_l, ours_g, ours_p), (theirs_l, theirs_g, theirs_p) = out["ember"], out["torch"]
    compare(ours_l[0], theirs_l[0], 0.0, f"{name} first loss")  # the same model: the same bits
    for i, (a, b) in enumerate(zip(ours_p, theirs_p, strict=True)):
        assert a.dtype is ember.bfloat16 and a.grad.dtype is ember.bfloat16
        compare(ours_g[i], theirs_g[i], 2**-6, f"{name} first gradient {i}")  # (backward formulas: test_bf16_ops)
        tol = TOL[name] if ember.backends.get_backend().name == "numpy" else TOL_TORCH_BACKEND.get(name, TOL[name])
        compare(a, b, tol, f"{name} parameter {i} after 4 steps")


def _bits(t: Any) -> list[int]:
    return t._backend.bfloat16_bits(t.detach()._data).ravel().tolist()


def _torch_bits(t: Any) -> list[int]:
    return t.contiguous().view(get_torch().int16).numpy().view(np.uint16).ravel().tolist()


SPECIAL = [1.5, 0.1, float("nan"), float("inf"), -0.0, 1e-40, 3.3895e38]


def test_records_and_files_keep_bfloat16_bits(tmp_path: Any) -> None:
    from ember.record import NamedMpkRecorder, SafetensorsRecorder, load

    m = enn.Linear(4, len(SPECIAL)).bfloat16()
    with ember.no_grad():
        m.bias.copy_(ember.tensor(SPECIAL))
    for rec, ext in ((NamedMpkRecorder(), "mpk"), (SafetensorsRecorder(), "safetensors")):
        for precision in ("as_is", "bfloat16"):
            path = rec.save(m.into_record(), tmp_path / f"m_{precision}", precision)
            got = load(path).tensors()
            assert got["bias"].dtype is ember.bfloat16, (ext, precision)
            assert _bits(got["bias"]) == _bits(m.bias) and _bits(got["weight"]) == _bits(m.weight), (ext, precision)
        wide = load(rec.save(m.into_record(), tmp_path / "full", "full")).tensors()["bias"]  # float32: exact
        assert wide.dtype is ember.float32 and _bits(wide.bfloat16()) == _bits(m.bias)
        back = enn.Linear(4, len(SPECIAL)).bfloat16()
        back.load_record(load(path))
        assert _bits(back.bias) == _bits(m.bias)
    ember.save(m.state_dict(), tmp_path / "m.pt")
    assert _bits(ember.load(tmp_path / "m.pt")["bias"]) == _bits(m.bias)


def test_files_from_torch_with_bfloat16(tmp_path: Any) -> None:
    torch = get_torch()
    from safetensors.torch import load_file, save_file

    w = torch.tensor(SPECIAL).bfloat16()
    torch.save({"w": w}, tmp_path / "t.pt")
    got = ember.load(tmp_path / "t.pt")["w"]
    assert got.dtype is ember.bfloat16 and _bits(got) == _torch_bits(w)
    save_file({"w": w}, str(tmp_path / "t.safetensors"))  # PyTorch's BF16 safetensors file
    got = ember.load(tmp_path / "t.safetensors")["w"]
    assert got.dtype is ember.bfloat16 and _bits(got) == _torch_bits(w)
    m = enn.Linear(4, len(SPECIAL)).bfloat16()
    with ember.no_grad():
        m.bias.copy_(ember.tensor(SPECIAL))
    from ember.record import SafetensorsRecorder

    path = SafetensorsRecorder().save(m.into_record(), tmp_path / "e", "as_is")
    theirs = load_file(str(path))  # Ember's BF16 file, read by safetensors for torch
    assert theirs["bias"].dtype == torch.bfloat16 and _torch_bits(theirs["bias"]) == _bits(m.bias)


def test_compiled_bfloat16_step_replays_eager_bit_for_bit() -> None:
    def make() -> tuple[Any, Any]:
        ember.manual_seed(0)
        m = enn.Sequential(enn.Linear(6, 8), enn.GELU(), enn.LayerNorm(8), enn.Linear(8, 3)).bfloat16()
        return m, ember.optim.AdamW(m.parameters(), lr=1e-2)

    def step(m: Any, opt: Any, x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    x, y = ember.tensor(X).bfloat16(), ember.tensor(Y)
    eager_m, eager_opt = make()
    comp_m, comp_opt = make()
    f = ember.compile(lambda a, b: step(comp_m, comp_opt, a, b))
    for _ in range(5):
        a, b = step(eager_m, eager_opt, x, y), f(x, y)
        assert a.dtype is ember.bfloat16 and b.dtype is ember.bfloat16 and _bits(a) == _bits(b)
    for p, q in zip(eager_m.parameters(), comp_m.parameters(), strict=True):
        assert p.dtype is ember.bfloat16 and _bits(p) == _bits(q)
    assert f.stats["replays"] >= 2


def test_torch_backend_sgd_updates_float16_and_bfloat16_cpu_parameters() -> None:
    get_torch()
    with ember.backends.use("torch"), ember.device("cpu"):
        for dtype, want in ((ember.float16, 0.9502), (ember.bfloat16, 0.9492)):  # 1 - 0.05, rounded
            p = enn.Parameter(ember.ones(48, dtype=dtype))  # three of torch's 16-element blocks
            p.grad = ember.full((48,), 0.5, dtype=dtype)
            ember.optim.SGD([p], lr=0.1).step()
            np.testing.assert_allclose(p.detach().float().numpy(), want, atol=1e-4, err_msg=str(dtype))
