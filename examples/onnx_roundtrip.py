"""Train a small CNN on the 8x8 digits, export it to ONNX, run it in onnxruntime, re-import it, fine-tune it.

    pip install 'ember[onnx]'
    python examples/onnx_roundtrip.py --epochs 5 --out runs/onnx-roundtrip

1. trains a CNN in Ember (a few epochs);
2. ``ember.onnx.export`` writes ``digits_cnn.onnx`` with a dynamic batch dimension;
3. onnxruntime runs it on the test set: same predictions as Ember, logits within 1e-5;
4. ``ember.onnx.load`` re-imports the file as a Module (weights as Params) and fine-tunes it one epoch.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import ember
import ember.nn as nn
import ember.nn.functional as F
import ember.onnx
from ember.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        return self.fc(x.flatten(1))


def run_epoch(model: Any, loader: DataLoader, opt: Any) -> float:
    model.train()
    device = next(model.parameters()).device  # the data set is on the CPU; the model on the default device
    total = 0.0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        total += loss.item() * len(x)
    return total / len(loader.dataset)


def accuracy(model: Any, x: ember.Tensor, y: ember.Tensor) -> float:
    model.eval()
    device = next(model.parameters()).device
    with ember.no_grad():
        return (model(x.to(device)).argmax(1) == y.to(device)).float().mean().item()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--limit", type=int, default=None, help="use at most this many samples per split")
    p.add_argument("--out", type=Path, default=Path("runs/onnx-roundtrip"))
    args = p.parse_args(argv)
    from ember.data import digits

    ember.manual_seed(0)
    train, test = digits(train=True), digits(train=False)
    if args.limit:
        train = TensorDataset(*(t[: args.limit] for t in train.tensors))
        test = TensorDataset(*(t[: args.limit] for t in test.tensors))
    x_test, y_test = test.tensors
    loader = DataLoader(train, batch_size=32, shuffle=True, seed=0)

    model = Net()
    opt = ember.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(1, args.epochs + 1):
        loss = run_epoch(model, loader, opt)
        print(f"epoch {epoch}: train loss {loss:.4f}, test accuracy {accuracy(model, x_test, y_test):.3f}")

    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "digits_cnn.onnx"
    device = next(model.parameters()).device
    ember.onnx.export(model, x_test[:1].to(device), path, input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})  # fmt: skip
    print(f"exported {path} ({path.stat().st_size:,} bytes)")

    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (ort_logits,) = session.run(None, {"image": x_test.numpy()})
    with ember.no_grad():
        ours = model(x_test.to(device)).numpy()
    diff = float(abs(ort_logits - ours).max())
    agree = float((ort_logits.argmax(1) == ours.argmax(1)).mean())
    print(f"onnxruntime: max |logit difference| {diff:.2e}, same prediction on {100 * agree:.1f}% of the test set")

    imported = ember.onnx.load(path)
    before = accuracy(imported, x_test, y_test)
    tune = ember.optim.SGD(imported.parameters(), lr=0.01, momentum=0.9)
    loss = run_epoch(imported, loader, tune)
    after = accuracy(imported, x_test, y_test)
    print(f"re-imported: test accuracy {before:.3f}; after one fine-tuning epoch (loss {loss:.4f}): {after:.3f}")
    imported.save(args.out / "fine_tuned.mpk")
    return {"diff": diff, "agree": agree, "before": before, "after": after, "loss": loss}


if __name__ == "__main__":
    main()
