"""Linear regression with raw tensors and autograd: fit y = X w + b by gradient descent.

python examples/linear_regression.py                 # 100 steps, prints the loss every 20
python examples/linear_regression.py --steps 300 --lr 0.05
"""

from __future__ import annotations

import argparse

import ember


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100, help="gradient-descent steps (default 100)")
    p.add_argument("--lr", type=float, default=0.1, help="learning rate (default 0.1)")
    p.add_argument("--samples", type=int, default=1000, help="number of synthetic samples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = p.parse_args(argv)

    ember.manual_seed(args.seed)
    true_w, true_b = ember.tensor([[2.0], [-3.4]]), 4.2
    x = ember.randn(args.samples, 2)
    y = x @ true_w + true_b + 0.01 * ember.randn(args.samples, 1)

    w = ember.zeros(2, 1, requires_grad=True)
    b = ember.zeros(1, requires_grad=True)
    for step in range(args.steps):
        loss = ((x @ w + b - y) ** 2).mean()
        w.grad = b.grad = None
        loss.backward()
        with ember.no_grad():
            w -= args.lr * w.grad
            b -= args.lr * b.grad
        if step % 20 == 0:
            print(f"step {step:3d}  loss {loss.item():.6f}")

    print(f"w = {w.detach().numpy().ravel().round(3)} (true [2.0, -3.4]), b = {b.item():.3f} (true 4.2)")
    return {"loss": loss.item(), "b": b.item()}


if __name__ == "__main__":
    main()
