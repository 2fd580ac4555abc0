"""A small CNN and a Transformer block trained 20 steps under bfloat16 autocast stay within 2% of PyTorch's
loss trajectory from the same weights (torch backend; the float32 master weights are updated each step)."""

import numpy as np
import pytest

import ember
from ember import backends

STEPS = 20


def _copy(e_mod, t_mod):
    e_mod.load_state_dict({k: v.detach().numpy() for k, v in t_mod.state_dict().items()})


def _trajectories(torch, t_model, e_model, x, y, loss_name, opt_name, lr):
    t_opt = getattr(torch.optim, opt_name)(t_model.parameters(), lr=lr)
    e_opt = getattr(ember.optim, opt_name)(e_model.parameters(), lr=lr)
    t_loss_fn = getattr(torch.nn.functional, loss_name)
    e_loss_fn = getattr(ember.nn.functional, loss_name)
    tx, ty, ex, ey = torch.tensor(x), torch.tensor(y), ember.tensor(x), ember.tensor(y)
    t_losses, e_losses = [], []
    for _ in range(STEPS):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            t_loss = t_loss_fn(t_model(tx), ty)
        t_opt.zero_grad()
        t_loss.backward()
        t_opt.step()
        with ember.autocast("cpu", dtype=ember.bfloat16):
            e_loss = e_loss_fn(e_model(ex), ey)
        assert e_loss.dtype is ember.float32  # losses run in float32 under autocast
        e_opt.zero_grad()
        e_loss.backward()
        e_opt.step()
        t_losses.append(t_loss.item())
        e_losses.append(e_loss.item())
    assert all(p.dtype is ember.float32 for p in e_model.parameters())  # the weights stay float32
    return np.array(t_losses), np.array(e_losses)


@pytest.fixture
def on_torch(torch):
    """torch on the CPU: CPU bfloat16 autocast is the subject, whatever the default device (EMBER_DEVICE=cuda)."""
    with backends.use("torch"), ember.device("cpu"):
        yield torch


def test_small_cnn_follows_torch_under_bf16_autocast(on_torch):
    torch = on_torch
    t_model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 10),
    )  # fmt: skip
    e_model = ember.nn.Sequential(
        ember.nn.Conv2d(1, 8, 3, padding=1), ember.nn.BatchNorm2d(8), ember.nn.ReLU(), ember.nn.MaxPool2d(2),
        ember.nn.Conv2d(8, 8, 3, padding=1), ember.nn.ReLU(), ember.nn.Flatten(), ember.nn.Linear(8 * 4 * 4, 10),
    )  # fmt: skip
    _copy(e_model, t_model)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 10, 16)
    t, e = _trajectories(torch, t_model, e_model, x, y, "cross_entropy", "SGD", 0.03)
    assert t[-1] < 0.8 * t[0]  # it learns
    np.testing.assert_allclose(e, t, rtol=0.02)


def test_transformer_block_follows_torch_under_bf16_autocast(on_torch):
    torch = on_torch
    kw = {"d_model": 16, "nhead": 2, "dim_feedforward": 32, "dropout": 0.0, "batch_first": True}
    t_model = torch.nn.Sequential(torch.nn.TransformerEncoderLayer(**kw), torch.nn.Linear(16, 4))
    e_model = ember.nn.Sequential(ember.nn.TransformerEncoderLayer(**kw), ember.nn.Linear(16, 4))
    _copy(e_model, t_model)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6, 16)).astype(np.float32)
    y = rng.standard_normal((4, 6, 4)).astype(np.float32)
    t, e = _trajectories(torch, t_model, e_model, x, y, "mse_loss", "Adam", 3e-3)
    assert t[-1] < 0.8 * t[0]
    np.testing.assert_allclose(e, t, rtol=0.02)
