"""ResNet-18 inference (eval mode, no grad) on a batch of 1 synthetic 224x224 images (ms per batch)."""

from __future__ import annotations

import pathlib
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from _convnets import measure, parse, report, sync, torch_resnet18

NAME, BATCH = "resnet18_infer_b1", 1


def build(framework: str, device: str) -> object:
    lib: Any = __import__(framework)
    lib.manual_seed(0)
    if framework == "ember":
        from ember.models import ResNetConfig

        m = ResNetConfig(18).init(device=device)
    else:
        m = torch_resnet18().to(device)
    m.eval()
    x = lib.randn(BATCH, 3, 224, 224, device=device)

    def step() -> None:
        with lib.no_grad():
            m(x)

    return step


if __name__ == "__main__":
    args = parse(NAME)
    report(NAME, args, measure(build(args.framework, args.device), sync(args), args.seconds), None)
