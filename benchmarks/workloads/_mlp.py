"""The MLP 784-512-512-10 training step (batch 128) written as a user would, in either framework."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from _harness import framework

BATCH = 128


def mlp_step(args: argparse.Namespace, optimizer: str) -> Callable[[], Any]:
    lib = framework(args)
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    x = lib.randn(BATCH, 784)
    y = lib.randint(0, 10, (BATCH,))
    if args.device == "cuda":
        model, x, y = model.to("cuda"), x.to("cuda"), y.to("cuda")
    opt = lib.optim.SGD(model.parameters(), lr=0.01) if optimizer == "sgd" else lib.optim.Adam(model.parameters())
    cross_entropy = lib.nn.functional.cross_entropy

    def step() -> Any:
        opt.zero_grad()
        loss = cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step
