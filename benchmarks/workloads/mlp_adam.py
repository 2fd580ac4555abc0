"""MLP 784-512-512-10, batch 128, one Adam training step (nn.Sequential, cross_entropy, optim.Adam): samples/s."""

from _harness import parse, report
from _mlp import BATCH, mlp_step

if __name__ == "__main__":
    args = parse("mlp_adam")
    report("mlp_adam", args, mlp_step(args, "adam"), unit="samples/s", per_step=BATCH)
