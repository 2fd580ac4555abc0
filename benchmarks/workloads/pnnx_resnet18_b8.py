"""ResNet-18 (224x224, batch 8): ember.pnnx (pnnx export) vs PyTorch eager, same model, ms/batch."""

from _harness import parse, report
from _pnnx_bench import step_for

NAME = "pnnx_resnet18_b8"

if __name__ == "__main__":
    args = parse(NAME)
    report(NAME, args, step_for(args, "resnet18", batch=8), unit="ms", per_step=1)
