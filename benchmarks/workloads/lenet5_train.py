"""LeNet-5 training with SGD on batches of 64 synthetic 28x28 images (samples/s)."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from _convnets import measure, parse, report, sync, torch_lenet5

NAME, BATCH = "lenet5_train", 64


def ember_step(device: str) -> object:
    import ember
    import ember.nn.functional as F
    from ember.models import LeNet5Config

    ember.manual_seed(0)
    m = LeNet5Config().init(device=device)
    opt = ember.optim.SGD(m.parameters(), lr=0.01)
    x, y = ember.randn(BATCH, 1, 28, 28, device=device), ember.randint(0, 10, (BATCH,), device=device)

    def step() -> None:
        opt.zero_grad()
        F.cross_entropy(m(x), y).backward()
        opt.step()

    return step


def torch_step(device: str) -> object:
    import torch

    torch.manual_seed(0)
    m = torch_lenet5().to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x, y = torch.randn(BATCH, 1, 28, 28, device=device), torch.randint(0, 10, (BATCH,), device=device)

    def step() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()

    return step


if __name__ == "__main__":
    args = parse(NAME)
    step = ember_step(args.device) if args.framework == "ember" else torch_step(args.device)
    report(NAME, args, measure(step, sync(args), args.seconds), BATCH)  # type: ignore[arg-type]
