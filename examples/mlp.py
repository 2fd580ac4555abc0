"""An MLP on the bundled 8x8 digits with ember.nn and ember.optim: the hand-written training loop.

python examples/mlp.py                        # 20 epochs, saves mlp-digits.mpk
python examples/mlp.py --epochs 5 --lr 1e-3
"""

from __future__ import annotations

import argparse

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.data import DataLoader, digits
from ember.optim import Adam


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=20, help="training epochs (default 20)")
    p.add_argument("--batch-size", type=int, default=32, help="training batch size (default 32)")
    p.add_argument("--lr", type=float, default=2e-3, help="Adam learning rate (default 2e-3)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--save", default="mlp-digits.mpk", help="where to save the parameters (default mlp-digits.mpk)")
    args = p.parse_args(argv)

    ember.manual_seed(args.seed)
    train = DataLoader(digits(train=True, images=False), batch_size=args.batch_size, shuffle=True, seed=args.seed)
    valid = DataLoader(digits(train=False, images=False), batch_size=256)

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))  # on the default device
    opt = Adam(model.parameters(), lr=args.lr)
    device = model[0].weight.device  # the data is on the CPU: batches go where the model is

    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        model.train()
        for x, y in train:
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with ember.no_grad():
            correct = sum(int((model(x.to(device)).argmax(1) == y.to(device)).sum().item()) for x, y in valid)
        accuracy = correct / len(valid.dataset)
        print(f"epoch {epoch:2d}  last loss {loss.item():.4f}  valid accuracy {accuracy:.2%}")

    model.save(args.save)  # parameters only; nn.Sequential(...).load(path) restores them
    return {"accuracy": accuracy}


if __name__ == "__main__":
    main()
