"""ResNet-18 CIFAR training (batch 128) under autocast (float16 + GradScaler on CUDA, bfloat16 on the CPU)."""

from _gpu import CIFAR_BATCH, resnet18_cifar_train_step
from _harness import parse, report

if __name__ == "__main__":
    args = parse("resnet18_cifar_train_amp")
    step = resnet18_cifar_train_step(args, amp=True)
    report("resnet18_cifar_train_amp", args, step, unit="samples/s", per_step=CIFAR_BATCH)
