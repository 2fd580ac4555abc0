"""Plain-torch definitions of the convolution workloads' models (no torchvision), so that Ember and PyTorch
run the same architecture: LeNet-5 and ResNet-18.
"""

from __future__ import annotations

from typing import Any


def torch_lenet5() -> Any:
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10),
    )  # fmt: skip


def torch_resnet18(num_classes: int = 1000) -> Any:
    """torchvision's ResNet-18 architecture written with torch.nn only."""
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin: int, planes: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or cin != planes:
                self.downsample = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

        def forward(self, x: Any) -> Any:
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + (x if self.downsample is None else self.downsample(x)))

    layers: list[Any] = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, planes, stride), Block(planes, planes, 1)]
        cin = planes
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, num_classes)]
    return nn.Sequential(*layers)


def resnet18_infer_step(args: Any, batch: int) -> Any:
    """One no-grad forward pass of ResNet-18 (eval mode) on ``batch`` random 224x224 images."""
    from _harness import framework

    lib = framework(args)
    lib.manual_seed(0)
    if args.framework == "ember":
        from ember.models import ResNetConfig

        m = ResNetConfig(18).init(device=args.device)
    else:
        m = torch_resnet18().to(args.device)
    m.eval()
    x = lib.randn(batch, 3, 224, 224, device=args.device)

    def step() -> None:
        with lib.no_grad():
            m(x)

    return step
