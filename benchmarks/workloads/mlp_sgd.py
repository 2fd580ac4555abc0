"""MLP 784-512-512-10, batch 128, one SGD training step (nn.Sequential, cross_entropy, optim.SGD): samples/s."""

from _harness import parse, report
from _mlp import BATCH, mlp_step

if __name__ == "__main__":
    args = parse("mlp_sgd")
    report("mlp_sgd", args, mlp_step(args, "sgd"), unit="samples/s", per_step=BATCH)
