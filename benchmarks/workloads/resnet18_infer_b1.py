"""ResNet-18 inference (eval mode, no grad) on a batch of 1 synthetic 224x224 images: ms per batch."""

from _convnets import resnet18_infer_step
from _harness import parse, report

if __name__ == "__main__":
    args = parse("resnet18_infer_b1")
    report("resnet18_infer_b1", args, resnet18_infer_step(args, 1), unit="ms", per_step=1)
