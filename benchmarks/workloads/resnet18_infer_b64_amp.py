"""ResNet-18 inference, batch 64 of 224x224, under autocast (float16 on CUDA, bfloat16 on the CPU): ms."""

from _gpu import resnet18_infer_step
from _harness import parse, report

if __name__ == "__main__":
    args = parse("resnet18_infer_b64_amp")
    report("resnet18_infer_b64_amp", args, resnet18_infer_step(args, 64, amp=True), unit="ms", per_step=1)
