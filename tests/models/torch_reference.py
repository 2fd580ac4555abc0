"""torchvision's architectures written out in plain torch (torchvision does not install with the pinned torch),
with torchvision's module names, small enough for fast tests. Each builder takes the widths as arguments."""

from __future__ import annotations

import math
from collections import OrderedDict

import torch
from torch import nn
from torch.nn import functional as F


def cna(cin, cout, k=3, stride=1, groups=1, norm=nn.BatchNorm2d, act=nn.ReLU, padding=None, bias=None):
    """torchvision.ops.Conv2dNormActivation: Sequential(conv, norm, act) numbered 0, 1, 2."""
    layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2 if padding is None else padding, groups=groups,
                        bias=norm is None if bias is None else bias)]  # fmt: skip
    if norm is not None:
        layers.append(norm(cout))
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class SE(nn.Module):
    def __init__(self, c, s, act=nn.ReLU, scale=nn.Sigmoid):
        super().__init__()
        self.avgpool, self.fc1, self.fc2 = nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, s, 1), nn.Conv2d(s, c, 1)
        self.activation, self.scale_activation = act(), scale()

    def forward(self, x):
        return x * self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))


# -- ResNet -----------------------------------------------------------------------------------------------
class Basic(nn.Module):
    expansion = 1

    def __init__(self, cin, planes, stride, down):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.conv2, self.bn2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False), nn.BatchNorm2d(planes)
        self.downsample = down

    def forward(self, x):
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        return self.relu(out + (self.downsample(x) if self.downsample is not None else x))


class Bottle(nn.Module):
    expansion = 4

    def __init__(self, cin, planes, stride, down):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, planes, 1, bias=False), nn.BatchNorm2d(planes)
        self.conv2, self.bn2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes)
        self.conv3, self.bn3 = nn.Conv2d(planes, planes * 4, 1, bias=False), nn.BatchNorm2d(planes * 4)
        self.relu, self.downsample = nn.ReLU(), down

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn3(self.conv3(self.relu(self.bn2(self.conv2(out)))))
        return self.relu(out + (self.downsample(x) if self.downsample is not None else x))


class ResNet(nn.Module):
    def __init__(self, block, counts, width=64, num_classes=1000):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width)
        self.relu, self.maxpool = nn.ReLU(), nn.MaxPool2d(3, 2, 1)
        cin = width
        for i, n in enumerate(counts):
            planes, blocks = width * 2**i, []
            for j in range(n):
                s = (1 if i == 0 else 2) if j == 0 else 1
                down = None
                if j == 0 and (s != 1 or cin != planes * block.expansion):
                    down = nn.Sequential(nn.Conv2d(cin, planes * block.expansion, 1, s, bias=False),
                                         nn.BatchNorm2d(planes * block.expansion))  # fmt: skip
                blocks.append(block(cin, planes, s, down))
                cin = planes * block.expansion
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
        self.avgpool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# -- VGG --------------------------------------------------------------------------------------------------
class VGG(nn.Module):
    def __init__(self, cfg, bn, hidden, num_classes):
        super().__init__()
        layers, cin = [], 3
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, v, 3, padding=1), *([nn.BatchNorm2d(v)] if bn else []), nn.ReLU()]
                cin = v
        self.features, self.avgpool = nn.Sequential(*layers), nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(nn.Linear(cin * 49, hidden), nn.ReLU(), nn.Dropout(), nn.Linear(hidden, hidden),
                                        nn.ReLU(), nn.Dropout(), nn.Linear(hidden, num_classes))  # fmt: skip

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


# -- MobileNetV2 / V3 --------------------------------------------------------------------------------------
def divisible(v, d=8):
    n = max(d, int(v + d / 2) // d * d)
    return n + d if n < 0.9 * v else n


class InvRes(nn.Module):
    def __init__(self, cin, cout, stride, t):
        super().__init__()
        hidden, layers = round(cin * t), []
        if t != 1:
            layers.append(cna(cin, hidden, 1, act=nn.ReLU6))
        layers += [cna(hidden, hidden, 3, stride, hidden, act=nn.ReLU6), nn.Conv2d(hidden, cout, 1, bias=False),
                   nn.BatchNorm2d(cout)]  # fmt: skip
        self.conv, self.res = nn.Sequential(*layers), stride == 1 and cin == cout

    def forward(self, x):
        return x + self.conv(x) if self.res else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, width_mult, num_classes):
        super().__init__()
        cin, last = divisible(32 * width_mult), divisible(1280 * max(1.0, width_mult))
        layers = [cna(3, cin, 3, 2, act=nn.ReLU6)]
        for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                           (6, 320, 1, 1)):  # fmt: skip
            for i in range(n):
                layers.append(InvRes(cin, divisible(c * width_mult), s if i == 0 else 1, t))
                cin = divisible(c * width_mult)
        layers.append(cna(cin, last, 1, act=nn.ReLU6))
        self.features, self.classifier = (
            nn.Sequential(*layers),
            nn.Sequential(nn.Dropout(0.2), nn.Linear(last, num_classes)),
        )

    def forward(self, x):
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class V3Block(nn.Module):
    def __init__(self, cin, k, cexp, cout, se, act, stride, norm):
        super().__init__()
        act = nn.Hardswish if act == "HS" else nn.ReLU
        layers = [cna(cin, cexp, 1, norm=norm, act=act)] if cexp != cin else []
        layers.append(cna(cexp, cexp, k, stride, cexp, norm=norm, act=act))
        if se:
            layers.append(SE(cexp, divisible(cexp // 4), scale=nn.Hardsigmoid))
        layers.append(cna(cexp, cout, 1, norm=norm, act=None))
        self.block, self.res = nn.Sequential(*layers), stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.res else self.block(x)


class MobileNetV3(nn.Module):
    """``setting``: (in, kernel, expanded, out, se, activation, stride) rows, channels already scaled."""

    def __init__(self, setting, last_channel, num_classes):
        super().__init__()
        norm = lambda c: nn.BatchNorm2d(c, eps=0.001, momentum=0.01)
        layers = [cna(3, setting[0][0], 3, 2, norm=norm, act=nn.Hardswish)]
        layers += [V3Block(*row, norm) for row in setting]
        last_in = setting[-1][3]
        layers.append(cna(last_in, 6 * last_in, 1, norm=norm, act=nn.Hardswish))
        self.features, self.avgpool = nn.Sequential(*layers), nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(6 * last_in, last_channel), nn.Hardswish(), nn.Dropout(0.2),
                                        nn.Linear(last_channel, num_classes))  # fmt: skip

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


# -- EfficientNet ------------------------------------------------------------------------------------------
class MBConv(nn.Module):
    def __init__(self, t, k, stride, cin, cout):
        super().__init__()
        exp, layers = divisible(cin * t), []
        if exp != cin:
            layers.append(cna(cin, exp, 1, act=nn.SiLU))
        layers += [cna(exp, exp, k, stride, exp, act=nn.SiLU), SE(exp, max(1, cin // 4), act=nn.SiLU),
                   cna(exp, cout, 1, act=None)]  # fmt: skip
        self.block, self.res = nn.Sequential(*layers), stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.res else self.block(x)  # stochastic depth is the identity in eval


class EfficientNet(nn.Module):
    """``setting``: (expand, kernel, stride, in, out, blocks) rows with the channels already scaled."""

    def __init__(self, setting, num_classes):
        super().__init__()
        layers = [cna(3, setting[0][3], 3, 2, act=nn.SiLU)]
        for t, k, s, cin, cout, n in setting:
            layers.append(nn.Sequential(*(MBConv(t, k, s if i == 0 else 1, cin if i == 0 else cout, cout)
                                          for i in range(n))))  # fmt: skip
        last = 4 * setting[-1][4]
        layers.append(cna(setting[-1][4], last, 1, act=nn.SiLU))
        self.features, self.avgpool = nn.Sequential(*layers), nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


# -- ConvNeXt ----------------------------------------------------------------------------------------------
class LayerNorm2d(nn.LayerNorm):
    def forward(self, x):
        return F.layer_norm(x.permute(0, 2, 3, 1), self.normalized_shape, self.weight, self.bias, self.eps
                            ).permute(0, 3, 1, 2)  # fmt: skip


class Permute(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return x.permute(*self.dims)


class CNBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(dim, dim, 7, padding=3, groups=dim), Permute([0, 2, 3, 1]),
                                   nn.LayerNorm(dim, eps=1e-6), nn.Linear(dim, 4 * dim), nn.GELU(),
                                   nn.Linear(4 * dim, dim), Permute([0, 3, 1, 2]))  # fmt: skip
        self.layer_scale = nn.Parameter(torch.ones(dim, 1, 1) * 1e-6)

    def forward(self, x):
        return x + self.layer_scale * self.block(x)


class ConvNeXt(nn.Module):
    """``setting``: (channels, next channels or None, blocks) rows."""

    def __init__(self, setting, num_classes):
        super().__init__()
        norm = lambda c: LayerNorm2d(c, eps=1e-6)
        layers = [cna(3, setting[0][0], 4, 4, norm=norm, act=None, padding=0, bias=True)]
        for cin, cout, n in setting:
            layers.append(nn.Sequential(*(CNBlock(cin) for _ in range(n))))
            if cout is not None:
                layers.append(nn.Sequential(norm(cin), nn.Conv2d(cin, cout, 2, 2)))
        last = setting[-1][0]
        self.features, self.avgpool = nn.Sequential(*layers), nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(norm(last), nn.Flatten(1), nn.Linear(last, num_classes))

    def forward(self, x):
        return self.classifier(self.avgpool(self.features(x)))


# -- ViT ---------------------------------------------------------------------------------------------------
class EncoderBlock(nn.Module):
    def __init__(self, heads, dim, mlp):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.dropout, self.ln_2 = nn.Dropout(0.0), nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Dropout(0.0), nn.Linear(mlp, dim), nn.Dropout(0.0))

    def forward(self, inp):
        x = self.ln_1(inp)
        x = self.dropout(self.self_attention(x, x, x, need_weights=False)[0]) + inp
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    def __init__(self, seq, layers, heads, dim, mlp):
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.empty(1, seq, dim).normal_(std=0.02))
        self.dropout = nn.Dropout(0.0)
        self.layers = nn.Sequential(OrderedDict((f"encoder_layer_{i}", EncoderBlock(heads, dim, mlp))
                                                for i in range(layers)))  # fmt: skip
        self.ln = nn.LayerNorm(dim, eps=1e-6)

    def forward(self, x):
        return self.ln(self.layers(self.dropout(x + self.pos_embedding)))


class ViT(nn.Module):
    def __init__(self, image, patch, layers, heads, dim, mlp, num_classes):
        super().__init__()
        self.dim = dim
        self.conv_proj = nn.Conv2d(3, dim, patch, patch)
        self.class_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.encoder = Encoder((image // patch) ** 2 + 1, layers, heads, dim, mlp)
        self.heads = nn.Sequential(OrderedDict(head=nn.Linear(dim, num_classes)))

    def forward(self, x):
        n = x.shape[0]
        x = self.conv_proj(x).reshape(n, self.dim, -1).permute(0, 2, 1)
        x = torch.cat([self.class_token.expand(n, -1, -1), x], dim=1)
        return self.heads(self.encoder(x)[:, 0])


def randomize(model, seed=0):
    """Non-trivial weights and batch-norm statistics (eval mode uses the running ones)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in model.state_dict().items():
            if name.endswith("num_batches_tracked"):
                continue
            if name.endswith("running_var"):
                t.copy_(torch.rand(t.shape, generator=g) + 0.5)
            else:
                t.copy_(torch.randn(t.shape, generator=g) / math.sqrt(max(1, t[0].numel() if t.ndim > 1 else 1)))
    return model.eval()
