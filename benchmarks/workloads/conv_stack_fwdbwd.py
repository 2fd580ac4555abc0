"""A ResNet-style stack: four (3x3 conv 64->64, BatchNorm, ReLU) on 8x64x32x32, forward + backward (samples/s)."""

from __future__ import annotations

import pathlib
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from _convnets import measure, parse, report, sync

NAME, BATCH = "conv_stack_fwdbwd", 8


def build(lib: Any, device: str) -> object:
    lib.manual_seed(0)
    layers: list[Any] = []
    for _ in range(4):
        layers += [lib.nn.Conv2d(64, 64, 3, padding=1, bias=False), lib.nn.BatchNorm2d(64), lib.nn.ReLU()]
    m = lib.nn.Sequential(*layers).to(device)
    x = lib.randn(BATCH, 64, 32, 32, device=device, requires_grad=True)

    def step() -> None:
        for p in m.parameters():
            p.grad = None
        x.grad = None
        m(x).sum().backward()

    return step


if __name__ == "__main__":
    args = parse(NAME)
    lib = __import__(args.framework)
    report(NAME, args, measure(build(lib, args.device), sync(args), args.seconds), BATCH)  # type: ignore[arg-type]
