"""Layers: a LeNet-5 training step on MNIST-sized batches, LSTM forward+backward, and model cold start.

Ember next to PyTorch in one run; throughput in samples/s (ratio > 1 beats torch). The cold-start row
compares ``ResNet-50 init_with(record)`` with ``init()`` + ``load_record`` (both Ember; ratio = speed-up).
"""

from __future__ import annotations

import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from _common import best_of, table, torch_or_none

import ember
import ember.nn.functional as F
from ember.models import LeNet5Config, ResNetConfig
from ember.optim import SGD


def lenet_ember(batch: int) -> object:
    ember.manual_seed(0)
    m = LeNet5Config().init()
    opt = SGD(m.parameters(), lr=0.01)
    x, y = ember.randn(batch, 1, 28, 28), ember.randint(0, 10, (batch,))

    def step() -> object:
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def lenet_torch(torch: object, batch: int) -> object:
    tn = torch.nn  # type: ignore[attr-defined]
    m = tn.Sequential(tn.Conv2d(1, 6, 5, padding=2), tn.ReLU(), tn.MaxPool2d(2), tn.Conv2d(6, 16, 5), tn.ReLU(),
                      tn.MaxPool2d(2), tn.Flatten(), tn.Linear(400, 120), tn.ReLU(), tn.Linear(120, 84), tn.ReLU(),
                      tn.Linear(84, 10))  # fmt: skip
    opt = torch.optim.SGD(m.parameters(), lr=0.01)  # type: ignore[attr-defined]
    x, y = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))  # type: ignore[attr-defined]

    def step() -> object:
        opt.zero_grad()
        loss = tn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def conv_stack(lib: object, batch: int = 8) -> object:
    """A ResNet-style stack: four 3x3 convolutions (64 channels, 32x32) with batch norm and ReLU."""
    layers = []
    for _ in range(4):
        layers += [lib.nn.Conv2d(64, 64, 3, padding=1, bias=False), lib.nn.BatchNorm2d(64), lib.nn.ReLU()]  # type: ignore[attr-defined]
    m = lib.nn.Sequential(*layers)  # type: ignore[attr-defined]
    x = lib.randn(batch, 64, 32, 32, requires_grad=True)  # type: ignore[attr-defined]

    def step() -> object:
        y = m(x)
        y.sum().backward()
        return y

    return step


def lstm(lib: object, seq: int = 32, batch: int = 32, hidden: int = 128) -> object:
    mod = lib.nn.LSTM(64, hidden, batch_first=True)  # type: ignore[attr-defined]
    x = lib.randn(batch, seq, 64, requires_grad=True)  # type: ignore[attr-defined]

    def step() -> object:
        out, _ = mod(x)
        out.sum().backward()
        return out

    return step


def cold_start() -> tuple[float, float]:
    """Building ResNet-50 from a saved record (decoded once, outside the timing): init() + load versus init_with."""
    from ember.record import BytesRecorder

    cfg = ResNetConfig(50, num_classes=1000)
    rec = BytesRecorder().from_bytes(BytesRecorder().to_bytes(cfg.init().into_record()))
    t0 = time.perf_counter()
    m = cfg.init()
    m.load_record(rec)
    slow = time.perf_counter() - t0
    t0 = time.perf_counter()
    cfg.init_with(rec)
    fast = time.perf_counter() - t0
    return slow, fast


def main() -> None:
    torch = torch_or_none()
    rows = []
    batch = 64
    e = batch / best_of(lenet_ember(batch), repeat=3, number=3)
    t = batch / best_of(lenet_torch(torch, batch), repeat=3, number=3) if torch else float("nan")
    rows.append(("LeNet-5 train step, batch 64 (samples/s)", e, t))
    e = 8 / best_of(conv_stack(ember), repeat=3)
    t = 8 / best_of(conv_stack(torch), repeat=3) if torch else float("nan")
    rows.append(("3x3 conv stack 64ch 32x32 fwd+bwd (img/s)", e, t))
    e = 32 / best_of(lstm(ember), repeat=3)
    t = 32 / best_of(lstm(torch), repeat=3) if torch else float("nan")
    rows.append(("LSTM 64->128, T=32, fwd+bwd (seq/s)", e, t))
    table(rows, "(samples/s: higher is better, ratio > 1 beats torch)")
    slow, fast = cold_start()
    print(f"ResNet-50 init()+load_record {slow:.3f}s, init_with(record) {fast:.3f}s: {slow / fast:.1f}x faster")


if __name__ == "__main__":
    main()
