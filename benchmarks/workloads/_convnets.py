"""Shared by the convolution workloads: command line, steady-state timing, the JSON line, plain-torch models.

Each workload script builds one step for Ember or PyTorch and hands it to :func:`main`; the PyTorch side
uses only ``torch`` (no torchvision), so both frameworks run the same architecture.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

Step = Callable[[], object]


def parse(name: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=f"workload {name}")
    p.add_argument("--framework", choices=("ember", "torch"), default="ember")
    p.add_argument("--backend", choices=("numpy", "torch"), default="numpy", help="Ember's backend")
    p.add_argument("--device", default="cpu")
    p.add_argument("--seconds", type=float, default=3.0, help="time spent in the timed steady state")
    args = p.parse_args()
    if args.framework == "ember":
        os.environ["EMBER_BACKEND"] = args.backend  # read when ember is imported
    return args


def sync(args: argparse.Namespace) -> Callable[[], None]:
    """A function that waits for queued device work (CUDA), else does nothing."""
    if args.device.startswith("cuda"):
        if args.framework == "torch":
            import torch

            return torch.cuda.synchronize
        import ember

        return lambda: ember.cuda.synchronize()  # type: ignore[attr-defined]
    return lambda: None


def measure(step: Step, wait: Callable[[], None], seconds: float, warmup: int = 3) -> float:
    """Median seconds per step over rounds of about 0.25 s, after ``warmup`` untimed steps."""
    for _ in range(warmup):
        step()
    wait()
    t0 = time.perf_counter()
    step()
    wait()
    once = max(time.perf_counter() - t0, 1e-6)
    per_round = max(1, int(0.25 / once))
    rounds: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(rounds) < 3:
        t0 = time.perf_counter()
        for _ in range(per_round):
            step()
        wait()
        rounds.append((time.perf_counter() - t0) / per_round)
    return statistics.median(rounds)


def report(name: str, args: argparse.Namespace, seconds_per_step: float, samples: int | None) -> None:
    """Print the protocol's JSON line: samples/s when ``samples`` is given, else ms per step."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    if samples is not None:
        value, unit, higher = samples / seconds_per_step, "samples/s", True
    else:
        value, unit, higher = seconds_per_step * 1000, "ms", False
    backend = args.backend if args.framework == "ember" else "torch"
    line = {"workload": name, "framework": args.framework, "backend": backend, "value": round(value, 4),
            "unit": unit, "higher_is_better": higher, "peak_rss_mb": round(rss, 1)}  # fmt: skip
    print(json.dumps(line))
    sys.stdout.flush()


# -- plain-torch models --------------------------------------------------------------------------
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
