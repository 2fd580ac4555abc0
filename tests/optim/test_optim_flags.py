"""PyTorch's optimizer implementation switches (``foreach``, ``fused``, ``capturable``, ``differentiable``) and
``decoupled_weight_decay`` (Adam, NAdam, RAdam), beside torch: the same param-group keys, the same trajectories,
the same refusals; a 0-d tensor ``lr``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

NAMES = ["SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "RMSprop", "Adagrad", "Adadelta", "ASGD", "Rprop",
         "Adafactor", "LBFGS"]  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_param_group_keys_are_pytorchs(name: str) -> None:
    keys = []
    for lib in (ember, torch):
        opt = getattr(lib.optim, name)([lib.nn.Parameter(lib.ones(2))], lr=0.1)
        keys.append(sorted(k for k in opt.param_groups[0] if k != "params"))
    assert keys[0] == keys[1]


def _trajectory(lib: Any, name: str, kw: dict[str, Any], steps: int = 6) -> np.ndarray:
    w = lib.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
    b = lib.tensor(np.linspace(0.5, -0.5, 3), requires_grad=True)
    opt = getattr(lib.optim, name)([w, b], **kw)
    x = lib.tensor(np.linspace(-2, 2, 20).reshape(5, 4))
    for _ in range(steps):
        opt.zero_grad()
        (((x @ w.T + b).tanh() ** 2).sum() + 0.1 * (w**4).sum()).backward()
        opt.step()
    return np.concatenate([np.asarray(w.detach().tolist()).ravel(), np.asarray(b.detach().tolist())])


CASES = [
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True, decoupled_weight_decay=True, foreach=False)),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True, foreach=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, foreach=True)),
    ("AdamW", dict(lr=0.01, fused=True)),
    ("Adagrad", dict(lr=0.1, fused=False, foreach=True)),
    ("RMSprop", dict(lr=0.01, capturable=False, foreach=None)),  # (capturable=True: CUDA only in PyTorch)
]


@pytest.mark.parametrize(("name", "kw"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_flags_and_decoupled_weight_decay_follow_pytorch(name: str, kw: dict[str, Any]) -> None:
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # PyTorch keeps NAdam's mu_product in the default dtype
    try:
        ours, theirs = _trajectory(ember, name, kw), _trajectory(torch, name, kw)
    finally:
        torch.set_default_dtype(old)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-10)  # (Adagrad, RMSprop: rounding, up to 4e-11)


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_fused_and_foreach_together_are_refused(lib: Any) -> None:
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        lib.optim.Adam([lib.nn.Parameter(lib.ones(2))], fused=True, foreach=True)


def test_differentiable_steps_are_refused_by_name() -> None:
    with pytest.raises(RuntimeError, match="differentiable=True"):
        ember.optim.SGD([ember.nn.Parameter(ember.ones(2))], lr=0.1, differentiable=True)


def test_a_tensor_learning_rate_is_its_value() -> None:
    opt = ember.optim.Adam([ember.nn.Parameter(ember.ones(2))], lr=ember.tensor(0.5, dtype=ember.float64))
    assert opt.param_groups[0]["lr"] == 0.5
    with pytest.raises(ValueError, match="1-element"):
        ember.optim.Adam([ember.nn.Parameter(ember.ones(2))], lr=ember.ones(2))
