"""A chain of 1,000 small operations (add, mul, tanh on shape (8,), then a sum): per-op overhead."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from _harness import framework

N_OPS = 1000  # 333 x (add, mul, tanh) + sum


def chain_step(args: argparse.Namespace, backward: bool) -> Callable[[], Any]:
    lib = framework(args)
    lib.manual_seed(0)
    x = lib.randn(8, requires_grad=backward)
    if args.device == "cuda":
        x = x.detach().to("cuda").requires_grad_(backward)

    def step() -> Any:
        y = x
        for _ in range(333):
            y = (y + 1.0) * 0.5
            y = y.tanh()
        s = y.sum()
        if backward:
            s.backward()
        return s

    return step
