"""ResNet-18 inference (eval mode, no grad) on a batch of 8 synthetic 224x224 images: ms per batch."""

from _convnets import resnet18_infer_step
from _harness import parse, report

if __name__ == "__main__":
    args = parse("resnet18_infer_b8")
    report("resnet18_infer_b8", args, resnet18_infer_step(args, 8), unit="ms", per_step=1)
