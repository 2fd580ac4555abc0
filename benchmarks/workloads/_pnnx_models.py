"""Plain-torch ResNet-18 and YOLOv5s (no torchvision) and a pnnx export helper, for the PNNX benchmarks and tests.

``models()`` returns the classes: ``ResNet(widths, blocks, classes)`` (``ResNet()`` at its defaults is
ResNet-18) and ``YOLO(w, n, nc, decode)`` (``YOLO()`` at its defaults is YOLOv5s with a Focus stem: width
32, C3 depths 1-2-3-1, 80 classes, a head returning the decoded boxes then the three raw maps).
``export`` traces a model and runs the ``pnnx`` converter of the pnnx package on it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any


def models() -> dict[str, Any]:
    import torch
    from torch import nn

    class ConvBN(nn.Module):
        def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1, act: type = nn.SiLU) -> None:
            super().__init__()
            self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
            self.bn = nn.BatchNorm2d(c2)
            self.act = act()

        def forward(self, x):
            return self.act(self.bn(self.conv(x)))

    class BasicBlock(nn.Module):
        def __init__(self, c1: int, c2: int, s: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(c1, c2, 3, s, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(c2)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(c2, c2, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(c2)
            self.down = None
            if s != 1 or c1 != c2:
                self.down = nn.Sequential(nn.Conv2d(c1, c2, 1, s, bias=False), nn.BatchNorm2d(c2))

        def forward(self, x):
            y = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
            return self.relu(y + (x if self.down is None else self.down(x)))

    class ResNet(nn.Module):
        """ResNet-18's structure; ``widths=(64, 128, 256, 512), blocks=2`` is the real ResNet-18."""

        def __init__(self, widths=(64, 128, 256, 512), blocks: int = 2, classes: int = 1000) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(widths[0])
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            layers, c = [], widths[0]
            for i, w in enumerate(widths):
                seq = [BasicBlock(c, w, 1 if i == 0 else 2)] + [BasicBlock(w, w, 1) for _ in range(blocks - 1)]
                layers.append(nn.Sequential(*seq))
                c = w
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(c, classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    class Bottleneck(nn.Module):
        def __init__(self, c: int, shortcut: bool = True) -> None:
            super().__init__()
            self.cv1, self.cv2, self.add = ConvBN(c, c, 1), ConvBN(c, c, 3), shortcut

        def forward(self, x):
            y = self.cv2(self.cv1(x))
            return x + y if self.add else y

    class C3(nn.Module):
        def __init__(self, c1: int, c2: int, n: int = 1, shortcut: bool = True) -> None:
            super().__init__()
            h = c2 // 2
            self.cv1, self.cv2, self.cv3 = ConvBN(c1, h), ConvBN(c1, h), ConvBN(2 * h, c2)
            self.m = nn.Sequential(*(Bottleneck(h, shortcut) for _ in range(n)))

        def forward(self, x):
            return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))

    class SPPF(nn.Module):
        def __init__(self, c1: int, c2: int) -> None:
            super().__init__()
            self.cv1, self.cv2 = ConvBN(c1, c1 // 2), ConvBN(c1 * 2, c2)
            self.m = nn.MaxPool2d(5, 1, 2)

        def forward(self, x):
            x = self.cv1(x)
            y1 = self.m(x)
            y2 = self.m(y1)
            return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))

    class Focus(nn.Module):
        def __init__(self, c1: int, c2: int) -> None:
            super().__init__()
            self.conv = ConvBN(c1 * 4, c2, 3)

        def forward(self, x):
            return self.conv(torch.cat((x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]), 1))

    class Detect(nn.Module):
        def __init__(self, nc: int, ch: tuple[int, ...], strides=(8, 16, 32), decode: bool = True) -> None:
            super().__init__()
            self.no, self.na, self.decode = nc + 5, 3, decode
            self.stride = strides
            anchors = torch.tensor([[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119], [116, 90, 156, 198, 373, 326]])
            self.register_buffer("anchors", anchors.float().view(3, 3, 2))
            self.m = nn.ModuleList(nn.Conv2d(c, self.no * self.na, 1) for c in ch)

        def forward(self, xs):
            raw, z = [], []
            for i, x in enumerate(xs):
                x = self.m[i](x)
                raw.append(x)
                if not self.decode:
                    continue
                bs, _, ny, nx = x.shape
                x = x.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
                yv, xv = torch.meshgrid(torch.arange(ny, dtype=torch.float32), torch.arange(nx, dtype=torch.float32),
                                        indexing="ij")  # fmt: skip
                grid = torch.stack((xv, yv), 2).expand(1, self.na, ny, nx, 2) - 0.5
                agrid = self.anchors[i].view(1, self.na, 1, 1, 2).expand(1, self.na, ny, nx, 2)
                xy, wh, conf = x.sigmoid().split((2, 2, self.no - 4), 4)
                xy = (xy * 2 + grid) * self.stride[i]
                wh = (wh * 2) ** 2 * agrid
                z.append(torch.cat((xy, wh, conf), 4).view(bs, self.na * nx * ny, self.no))
            return (torch.cat(z, 1), *raw) if self.decode else tuple(raw)

    class YOLO(nn.Module):
        """YOLOv5s (Focus stem, C3, SPPF, FPN/PAN neck, Detect); ``w`` and the backbone C3 depths ``n`` scale it."""

        def __init__(self, w: int = 32, n=(1, 2, 3, 1), nc: int = 80, decode: bool = True) -> None:
            super().__init__()
            n = (n,) * 4 if isinstance(n, int) else n
            self.stem = Focus(3, w)
            self.b1 = nn.Sequential(ConvBN(w, 2 * w, 3, 2), C3(2 * w, 2 * w, n[0]))
            self.b2 = nn.Sequential(ConvBN(2 * w, 4 * w, 3, 2), C3(4 * w, 4 * w, n[1]))  # P3, stride 8
            self.b3 = nn.Sequential(ConvBN(4 * w, 8 * w, 3, 2), C3(8 * w, 8 * w, n[2]))  # P4, stride 16
            self.b4 = nn.Sequential(ConvBN(8 * w, 16 * w, 3, 2), C3(16 * w, 16 * w, n[3]), SPPF(16 * w, 16 * w))
            self.lat4, self.up = ConvBN(16 * w, 8 * w), nn.Upsample(scale_factor=2, mode="nearest")
            self.c34 = C3(16 * w, 8 * w, n[0], False)
            self.lat3 = ConvBN(8 * w, 4 * w)
            self.c23 = C3(8 * w, 4 * w, n[0], False)  # out P3
            self.d3 = ConvBN(4 * w, 4 * w, 3, 2)
            self.c33 = C3(8 * w, 8 * w, n[0], False)  # out P4
            self.d4 = ConvBN(8 * w, 8 * w, 3, 2)
            self.c44 = C3(16 * w, 16 * w, n[0], False)  # out P5
            self.detect = Detect(nc, (4 * w, 8 * w, 16 * w), decode=decode)

        def forward(self, x):
            p3 = self.b2(self.b1(self.stem(x)))
            p4 = self.b3(p3)
            p5 = self.b4(p4)
            h5 = self.lat4(p5)
            h4 = self.lat3(self.c34(torch.cat((self.up(h5), p4), 1)))
            o3 = self.c23(torch.cat((self.up(h4), p3), 1))
            o4 = self.c33(torch.cat((self.d3(o3), h4), 1))
            o5 = self.c44(torch.cat((self.d4(o4), h5), 1))
            return self.detect([o3, o4, o5])

    return {"ResNet": ResNet, "YOLO": YOLO}


def randomise_bn(model: Any, seed: int = 0) -> Any:
    """Give every BatchNorm non-trivial statistics and affine parameters (so folding is really tested)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)
    return model.eval()


def export(model: Any, example: Any, path: Path, optlevel: int = 2, *, trace: bool = True) -> subprocess.Popen:
    """Trace ``model`` to ``path`` (.pt) and start pnnx on a copy named ``STEM_oLEVEL.pt``, which writes
    ``STEM_oLEVEL.pnnx.param`` etc.; wait on the returned process with ``finish``.

    With ``trace=False`` the TorchScript file at ``path`` is reused. Each run gets its own copy because
    pnnx writes scratch files named after its input.
    """
    import torch

    import pnnx

    if trace:
        torch.jit.trace(model.eval(), example, check_trace=False).save(str(path))
    pt = path.with_name(f"{path.stem}_o{optlevel}.pt")
    shutil.copyfile(path, pt)
    shape = ",".join(map(str, example.shape))
    cmd = [pnnx.EXEC_PATH, str(pt), f"inputshape=[{shape}]f32", f"optlevel={optlevel}", "fp16=0"]
    return subprocess.Popen(cmd, cwd=path.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def finish(proc: subprocess.Popen, param: Path) -> None:
    """Wait for an ``export``; at optlevel 1 pnnx may abort in its later onnx/ncnn passes after writing the
    pnnx files (``NAME_pnnx.py`` is written last), which counts as success."""
    out, _ = proc.communicate(timeout=600)
    written = param.exists() and param.with_name(param.name.replace(".pnnx.param", "_pnnx.py")).exists()
    if proc.returncode != 0 and not written:
        raise RuntimeError(f"pnnx failed on {param}: {out.decode(errors='replace')[-2000:]}")
