"""A model zoo: Ember's small models with their Configs (MLP, LeNet-5, a GPT-style decoder), torchvision's
architectures with torchvision's state-dict keys (``weights=PATH`` loads a torchvision ``.pth``), and Hugging Face
GPT-2 and BERT (``from_pretrained(dir)`` reads ``config.json`` + ``model.safetensors``)."""

from ._weights import WeightsMismatchError
from .convnext import ConvNeXt, convnext_tiny
from .efficientnet import EfficientNet, efficientnet_b0
from .gpt import GPT, GPTConfig
from .lenet import LeNet5, LeNet5Config
from .mlp import MLP, MLPConfig
from .mobilenet import MobileNetV2, MobileNetV3, mobilenet_v2, mobilenet_v3_large, mobilenet_v3_small
from .resnet import ResNet, ResNetConfig, resnet18, resnet34, resnet50, resnet101
from .vgg import VGG, vgg11, vgg11_bn, vgg16, vgg16_bn
from .vit import VisionTransformer, vit_b_16

__all__ = [
    "GPT", "MLP", "VGG", "ConvNeXt", "EfficientNet", "GPTConfig", "LeNet5", "LeNet5Config", "MLPConfig", "MobileNetV2",
    "MobileNetV3", "ResNet", "ResNetConfig", "VisionTransformer", "WeightsMismatchError", "convnext_tiny",
    "efficientnet_b0", "mobilenet_v2", "mobilenet_v3_large", "mobilenet_v3_small", "resnet18", "resnet34",
    "resnet50", "resnet101", "vgg11", "vgg11_bn", "vgg16", "vgg16_bn", "vit_b_16",
]  # fmt: skip
