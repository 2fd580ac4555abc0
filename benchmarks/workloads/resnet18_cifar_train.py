"""ResNet-18 (10 classes) SGD training on batches of 128 synthetic 32x32 images: samples/s."""

from _gpu import CIFAR_BATCH, resnet18_cifar_train_step
from _harness import parse, report

if __name__ == "__main__":
    args = parse("resnet18_cifar_train")
    report("resnet18_cifar_train", args, resnet18_cifar_train_step(args), unit="samples/s", per_step=CIFAR_BATCH)
