"""ResNet-18 inference (eval mode, no grad) on a batch of 64 synthetic 224x224 images: ms per batch."""

from _gpu import resnet18_infer_step
from _harness import parse, report

if __name__ == "__main__":
    args = parse("resnet18_infer_b64")
    report("resnet18_infer_b64", args, resnet18_infer_step(args, 64), unit="ms", per_step=1)
