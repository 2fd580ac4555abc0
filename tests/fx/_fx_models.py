"""Models written once, for either library: ``build(lib)`` gets ``torch`` or ``ember`` and returns a module.

The fx tests trace each under both libraries with the same code and compare the graphs and the results."""

from __future__ import annotations

from typing import Any

import numpy as np


def mlp(lib: Any) -> Any:
    nn = lib.nn

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1, self.act, self.fc2 = nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    return MLP()


def cnn(lib: Any) -> Any:
    nn, F = lib.nn, lib.nn.functional

    class CNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
            self.conv2, self.bn2 = nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(8, 4))

        def forward(self, x):
            x = F.relu(self.bn1(self.conv1(x)))
            x = F.relu(self.bn2(self.conv2(x)))
            return self.head(self.pool(x))

    return CNN()


def residual(lib: Any) -> Any:
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.relu = nn.ReLU()

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + x)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(3, 4, 3, padding=1)
            self.layer1 = nn.Sequential(Block(4), Block(4))
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            x = self.layer1(self.stem(x))
            return self.fc(x.mean((2, 3)))

    return Net()


def functional(lib: Any) -> Any:
    nn, F = lib.nn, lib.nn.functional

    class Fn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(lib.randn(5, 6, dtype=lib.float64))
            self.register_buffer("shift", lib.ones(5, dtype=lib.float64))

        def forward(self, x):
            y = F.linear(x, self.weight) + self.shift
            y = F.gelu(y) * lib.sigmoid(y) - F.softmax(y, dim=-1)
            return F.layer_norm(lib.tanh(y), (5,)), lib.exp(-y.abs()).sum(dim=1, keepdim=True)

    return Fn()


def methods(lib: Any) -> Any:
    nn = lib.nn

    class Methods(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(6, 6)

        def forward(self, x, y):
            b = x.size(0)
            z = self.fc(x).view(b, 2, 3).transpose(1, 2).contiguous()
            z = z.reshape(x.shape[0], -1) * 2.0 + y.t().t()
            a, c = z.chunk(2, dim=1)
            w = lib.stack([a, c, a * c], dim=0).permute(1, 0, 2)
            v = lib.cat([w[:, 0], w[:, 1:].flatten(1), z[..., ::2]], dim=1)
            return v.pow(2).mean(-1) / (1 + v.max(dim=1).values), z[0, 1:3].unsqueeze(0)

    return Methods()


def constants(lib: Any) -> Any:
    """Tensors made inside forward (constants), a buffer and a tensor on the left of an operator with a proxy,
    shape unpacking, ``where``/``max`` and a parameter's methods."""
    nn = lib.nn

    class Constants(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(lib.randn(4, 4, dtype=lib.float64))
            self.register_buffer("c", lib.arange(4.0, dtype=lib.float64))

        def forward(self, x):
            b, c = x.shape
            one = lib.ones(4, dtype=lib.float64)
            y = x @ self.weight.t() + one
            z = lib.zeros_like(y) + self.c * y + b * c
            ops = [one - z, one / (z.abs() + 1), one ** z.tanh(), one * z, (one > z).to(z.dtype), z % 1.5]
            w = lib.full((4,), 2.0, dtype=lib.float64) * z
            return w.view(-1)[: x.size(0)], lib.where(z > 0, z, -z).max(dim=1)[0], sum(ops)

    return Constants()


def with_flag(lib: Any) -> Any:
    nn = lib.nn

    class Flag(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x, training_mode=False, scale=None):
            y = self.fc(x)
            if training_mode:
                y = y.relu()
            if scale is not None:
                y = y * scale
            return y

    return Flag()


MODELS = {
    "mlp": mlp, "cnn": cnn, "residual": residual, "functional": functional, "methods": methods, "constants": constants,
}  # fmt: skip
INPUT_SHAPES = {
    "mlp": [(4, 6)], "cnn": [(2, 3, 6, 6)], "residual": [(2, 3, 5, 5)], "functional": [(3, 6)],
    "methods": [(4, 6), (4, 6)], "constants": [(3, 4)],
}  # fmt: skip


def inputs(name: str, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in INPUT_SHAPES[name]]


def target_name(t: Any) -> str:
    """A node target as both libraries can agree on: the string, or the function's name."""
    return t if isinstance(t, str) else getattr(t, "__name__", repr(t))


def node_list(gm: Any) -> list[tuple[str, str]]:
    return [(n.op, target_name(n.target)) for n in gm.graph.nodes]


def load_from_torch(e_mod: Any, t_mod: Any) -> None:
    sd = t_mod.state_dict()
    e_mod.load_state_dict({k: v.detach().numpy() for k, v in sd.items()})
