"""A CNN on the bundled 8x8 digits, written the way PyTorch's MNIST example is, with ember.save checkpoints.

    python examples/digits_cnn_checkpoint.py --epochs 6             # trains, checkpointing every epoch
    python examples/digits_cnn_checkpoint.py --epochs 8 --resume    # continues from the last checkpoint

Each epoch writes ``<out>/last.pt`` (model, optimizer, scheduler, RNG state, epoch, history) with ``ember.save``;
the best model by validation accuracy goes to ``<out>/best.pt``. At the end the best one is loaded
into a fresh network and evaluated again.
"""

from __future__ import annotations

import argparse
import os

import ember
import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
from ember.optim.lr_scheduler import StepLR
from ember.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1, padding=1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = x.view(x.size(0), -1)
        x = self.dropout2(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


def load_digits(limit: int | None) -> tuple[TensorDataset, TensorDataset]:
    from ember.data import digits

    train, test = digits(train=True), digits(train=False)
    if limit:
        train = TensorDataset(*(t[:limit] for t in train.tensors))
        test = TensorDataset(*(t[:limit] for t in test.tensors))
    return train, test


def train_epoch(
    model: nn.Module, loader: DataLoader, optimizer: optim.Optimizer, epoch: int, log_every: int, device: ember.device
) -> float:
    model.train()
    total = 0.0
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(data)
        if log_every and batch_idx % log_every == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(loader.dataset)}]\tLoss: {loss:.6f}")
    return total / len(loader.dataset)


def evaluate(model: nn.Module, loader: DataLoader, device: ember.device) -> tuple[float, float]:
    model.eval()
    loss, correct = 0.0, 0
    with ember.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            loss += F.nll_loss(output, target, reduction="sum").item()
            correct += (
                output.argmax(dim=1, keepdim=True).eq(target.view_as(output.argmax(1, keepdim=True))).sum().item()
            )
    n = len(loader.dataset)
    return loss / n, correct / n


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=int(os.environ.get("EPOCHS", 6)))
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--limit", type=int, default=None, help="use only this many samples (quick runs)")
    p.add_argument("--out", default="runs/digits-cnn-checkpoint")
    p.add_argument("--resume", action="store_true", help="continue from <out>/last.pt")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--compile", action="store_true", help="train and evaluate through ember.compile(model)")
    args = p.parse_args(argv)
    device = ember.device(args.device or ("cuda" if ember.cuda.is_available() else "cpu"))

    ember.manual_seed(args.seed)
    train_set, test_set = load_digits(args.limit)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=256)
    model = Net().to(device)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=3, gamma=0.7)
    last, best = os.path.join(args.out, "last.pt"), os.path.join(args.out, "best.pt")

    start, history = 1, []
    if args.resume and os.path.exists(last):
        ckpt = ember.load(last, map_location="cpu")
        model.load_state_dict(ckpt["model_state_dict"])
        optimizer.load_state_dict(ckpt["optimizer_state_dict"])
        scheduler.load_state_dict(ckpt["scheduler_state_dict"])
        start, history = ckpt["epoch"] + 1, ckpt["history"]
        ember.set_rng_state(ckpt["rng_state"])  # the same shuffles and dropout masks as an uninterrupted run
        print(f"resumed from {last} after epoch {ckpt['epoch']}")

    net = ember.compile(model) if args.compile else model  # as torch.compile(model); checkpoints keep `model`'s keys
    for epoch in range(start, args.epochs + 1):
        train_loss = train_epoch(net, train_loader, optimizer, epoch, args.log_every, device)
        test_loss, acc = evaluate(net, test_loader, device)
        scheduler.step()
        history.append({"epoch": epoch, "train_loss": train_loss, "test_loss": test_loss, "accuracy": acc})
        print(f"Test set: epoch {epoch}, average loss {test_loss:.4f}, accuracy {acc:.1%}")
        ckpt = {
            "epoch": epoch,
            "model_state_dict": model.state_dict(),
            "optimizer_state_dict": optimizer.state_dict(),
            "scheduler_state_dict": scheduler.state_dict(),
            "history": history,
            "rng_state": ember.get_rng_state(),
        }
        ember.save(ckpt, last)
        if acc >= max(h["accuracy"] for h in history):
            ember.save(model.state_dict(), best)

    fresh = Net().to(device)
    fresh.load_state_dict(ember.load(best))
    best_loss, best_acc = evaluate(fresh, test_loader, device)
    print(f"best checkpoint: test loss {best_loss:.4f}, accuracy {best_acc:.1%}")
    return {"accuracy": best_acc, "test_loss": best_loss, "history": history}


if __name__ == "__main__":
    main()
