"""A small model zoo, each model with its Config: MLP, LeNet-5, ResNet-18/34/50, a GPT-style decoder."""

from .gpt import GPT, GPTConfig
from .lenet import LeNet5, LeNet5Config
from .mlp import MLP, MLPConfig
from .resnet import ResNet, ResNetConfig, resnet18, resnet34, resnet50

__all__ = ["GPT", "MLP", "GPTConfig", "LeNet5", "LeNet5Config", "MLPConfig", "ResNet", "ResNetConfig", "resnet18",
           "resnet34", "resnet50"]  # fmt: skip
