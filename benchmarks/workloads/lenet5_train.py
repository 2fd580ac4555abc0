"""LeNet-5 training with SGD on batches of 64 synthetic 28x28 images: samples/s."""

from typing import Any

from _convnets import torch_lenet5
from _harness import framework, parse, report

BATCH = 64


def lenet_step(args: Any) -> Any:
    lib = framework(args)
    lib.manual_seed(0)
    dev = args.device
    if args.framework == "ember":
        from ember.models import LeNet5Config

        m = LeNet5Config().init(device=dev)
    else:
        m = torch_lenet5().to(dev)
    opt = lib.optim.SGD(m.parameters(), lr=0.01)
    x, y = lib.randn(BATCH, 1, 28, 28, device=dev), lib.randint(0, 10, (BATCH,), device=dev)
    cross_entropy = lib.nn.functional.cross_entropy

    def step() -> None:
        opt.zero_grad()
        cross_entropy(m(x), y).backward()
        opt.step()

    return step


if __name__ == "__main__":
    args = parse("lenet5_train")
    report("lenet5_train", args, lenet_step(args), unit="samples/s", per_step=BATCH)
