"""A ResNet-style stack: four (3x3 conv 64->64, BatchNorm, ReLU) on 8x64x32x32, forward + backward: samples/s."""

from typing import Any

from _harness import framework, parse, report

BATCH = 8


def stack_step(args: Any) -> Any:
    lib = framework(args)
    lib.manual_seed(0)
    layers: list[Any] = []
    for _ in range(4):
        layers += [lib.nn.Conv2d(64, 64, 3, padding=1, bias=False), lib.nn.BatchNorm2d(64), lib.nn.ReLU()]
    m = lib.nn.Sequential(*layers).to(args.device)
    x = lib.randn(BATCH, 64, 32, 32, device=args.device, requires_grad=True)

    def step() -> None:
        for p in m.parameters():
            p.grad = None
        x.grad = None
        m(x).sum().backward()

    return step


if __name__ == "__main__":
    args = parse("conv_stack_fwdbwd")
    report("conv_stack_fwdbwd", args, stack_step(args), unit="samples/s", per_step=BATCH)
