"""torchvision's architectures in ``ember.models``: the same state-dict keys and shapes as torchvision 0.29.1
(recorded from torchvision itself in ``torchvision_0.29.1_keys.json.gz``), and the same outputs as plain-torch
reference forwards (``torch_reference.py``) from one ``.pth`` file, loaded by Ember's reader."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import models
from ember.models._weights import load_weights_file

HERE = Path(__file__).resolve().parent
KEYS = json.loads(gzip.decompress((HERE / "torchvision_0.29.1_keys.json.gz").read_bytes()))


@pytest.fixture(scope="module")
def ref():
    """The reference module; torch on one thread meanwhile (tiny convolutions on a busy machine spin otherwise)."""
    torch = pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("torch_reference", HERE / "torch_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield module
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name", ["resnet18", "resnet34", "resnet50", "mobilenet_v2", "mobilenet_v3_large",
                                  "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny"])  # fmt: skip
def test_full_size_state_dicts_have_torchvisions_keys_and_shapes(name):
    model = getattr(models, name)()
    assert [[k, list(v.shape)] for k, v in model.state_dict().items()] == KEYS[name]


def test_large_models_have_torchvisions_keys():
    """ResNet-101 at full size; VGG's 100M-parameter classifier and ViT-B/16 take seconds to fill, so they are
    built narrower: the same keys, and the same shapes where the width does not enter."""
    assert [[k, list(v.shape)] for k, v in models.resnet101().state_dict().items()] == KEYS["resnet101"]
    for name, cfg, bn in (("vgg11", "A", False), ("vgg11_bn", "A", True), ("vgg16", "D", False),
                          ("vgg16_bn", "D", True)):  # fmt: skip
        narrow = models.VGG(models.vgg.make_layers(models.vgg.CFGS[cfg], bn), hidden=8)
        expected = [[k, [8 if d == 4096 else d for d in shape]] for k, shape in KEYS[name]]
        assert [[k, list(v.shape)] for k, v in narrow.state_dict().items()] == expected, name
    small = models.VisionTransformer(224, 16, 12, 12, 24, 48)  # ViT-B/16's layout at width 24
    assert list(small.state_dict()) == [k for k, _ in KEYS["vit_b_16"]]


def _compare(torch_model, ember_model, tmp_path, shape, atol=1e-4):
    import torch

    path = tmp_path / "weights.pth"
    torch.save(torch_model.state_dict(), path)
    load_weights_file(ember_model, path)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = torch_model(x).numpy()
    with ember.no_grad():
        got = ember_model(ember.tensor(x.numpy())).numpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=atol * max(1.0, float(np.abs(expected).max())), rtol=0)


@pytest.mark.parametrize(("block", "depth", "counts"), [("Basic", 18, (2, 2, 2, 2)), ("Bottle", 50, (3, 4, 6, 3))])
def test_resnet_matches_the_torch_reference(ref, tmp_path, block, depth, counts):
    torch_model = ref.randomize(ref.ResNet(getattr(ref, block), counts, width=4, num_classes=7))
    _compare(torch_model, models.ResNetConfig(depth, num_classes=7, width=4).init(), tmp_path, (2, 3, 32, 32))


@pytest.mark.parametrize("bn", [False, True])
def test_vgg_matches_the_torch_reference(ref, tmp_path, bn):
    cfg = [4, "M", 8, 8, "M", 8, "M"]
    torch_model = ref.randomize(ref.VGG(cfg, bn, hidden=16, num_classes=5))
    ember_model = models.VGG(models.vgg.make_layers(cfg, bn), num_classes=5, hidden=16, channels=8)
    _compare(torch_model, ember_model, tmp_path, (2, 3, 16, 16))


def test_mobilenet_v2_matches_the_torch_reference(ref, tmp_path):
    torch_model = ref.randomize(ref.MobileNetV2(0.25, num_classes=6))
    _compare(torch_model, models.MobileNetV2(6, width_mult=0.25), tmp_path, (2, 3, 32, 32))


@pytest.mark.parametrize("which", ["large", "small"])
def test_mobilenet_v3_matches_the_torch_reference(ref, tmp_path, which):
    from ember.models.mobilenet import LARGE, SMALL, make_divisible

    width, setting = 0.25, LARGE if which == "large" else SMALL
    rows = [(make_divisible(c.input_channels * width), c.kernel, make_divisible(c.expanded_channels * width),
             make_divisible(c.out_channels * width), c.use_se, c.activation, c.stride) for c in setting]  # fmt: skip
    last = make_divisible((1280 if which == "large" else 1024) * width)
    torch_model = ref.randomize(ref.MobileNetV3(rows, last, num_classes=4))
    builder = models.mobilenet_v3_large if which == "large" else models.mobilenet_v3_small
    _compare(torch_model, builder(4, width_mult=width), tmp_path, (2, 3, 32, 32))


def test_efficientnet_matches_the_torch_reference(ref, tmp_path):
    from ember.models.efficientnet import EfficientNet, MBConvConfig

    rows = [
        (1, 3, 1, 8, 8, 1),
        (6, 3, 2, 8, 16, 2),
        (6, 5, 2, 16, 16, 1),
        (6, 3, 2, 16, 24, 1),
        (6, 5, 1, 24, 24, 2),
        (6, 5, 2, 24, 32, 1),
        (6, 3, 1, 32, 40, 1),
    ]  # B0's layout, narrower and shallower
    torch_model = ref.randomize(ref.EfficientNet(rows, num_classes=3))
    _compare(torch_model, EfficientNet([MBConvConfig(*r) for r in rows], num_classes=3), tmp_path, (2, 3, 32, 32))


def test_convnext_matches_the_torch_reference(ref, tmp_path):
    from ember.models.convnext import CNBlockConfig, ConvNeXt

    rows = [(8, 16, 1), (16, 24, 2), (24, None, 1)]
    torch_model = ref.randomize(ref.ConvNeXt(rows, num_classes=5))
    _compare(torch_model, ConvNeXt([CNBlockConfig(*r) for r in rows], num_classes=5), tmp_path, (2, 3, 32, 32))


def test_vit_matches_the_torch_reference(ref, tmp_path):
    torch_model = ref.randomize(ref.ViT(32, 8, 2, 2, 16, 32, num_classes=5))
    _compare(torch_model, models.VisionTransformer(32, 8, 2, 2, 16, 32, num_classes=5), tmp_path, (3, 3, 32, 32))


def test_weights_that_do_not_fit_list_the_first_mismatches(ref, tmp_path):
    import torch

    torch_model = ref.ResNet(ref.Basic, (2, 2, 2, 2), width=4, num_classes=7)
    state = torch_model.state_dict()
    state["extra.weight"] = torch.zeros(2)
    del state["fc.bias"]
    torch.save(state, tmp_path / "bad.pth")
    model = models.ResNetConfig(18, num_classes=10, width=4).init()
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    with pytest.raises(models.WeightsMismatchError) as e:
        load_weights_file(model, tmp_path / "bad.pth")
    message = str(e.value)
    assert "bad.pth: the weights do not fit ResNet" in message and "1 missing keys: fc.bias" in message
    assert "1 unexpected keys: extra.weight" in message
    assert "1 shape mismatches: fc.weight (file (7, 32), model (10, 32))" in message
    assert isinstance(e.value, ValueError) and isinstance(e.value, RuntimeError)
    assert all(np.array_equal(before[k], v.numpy()) for k, v in model.state_dict().items())  # nothing loaded
    with pytest.raises(models.WeightsMismatchError, match=r"122 missing keys: conv1\.weight, .* and 117 more"):
        load_weights_file(models.resnet18(), _save_other(torch, tmp_path))


def _save_other(torch, tmp_path):
    path = tmp_path / "other.pth"
    torch.save({"something.else": torch.zeros(1)}, path)
    return path


def test_weights_load_without_torch_through_embers_reader(ref, tmp_path):
    """A torchvision ``.pth`` loads in a process where ``import torch`` fails (the restricted zip reader)."""
    import torch

    torch_model = ref.randomize(ref.MobileNetV2(0.25, num_classes=6))
    torch.save(torch_model.state_dict(), tmp_path / "m.pth")
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    with torch.no_grad():
        np.save(tmp_path / "expected.npy", torch_model(torch.tensor(x)).numpy())
    program = (
        "import sys; sys.modules['torch'] = None\n"  # any `import torch` now raises ImportError
        "import numpy as np, ember\n"
        "from ember import models\n"
        "m = models.mobilenet_v2(6, weights='m.pth', width_mult=0.25)\n"
        "out = m(ember.tensor(np.load('x.npy'))).detach().numpy()\n"
        "np.testing.assert_allclose(out, np.load('expected.npy'), atol=1e-5)\n"
        "assert 'torch' not in sys.modules or sys.modules['torch'] is None\n"
        "print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "EMBER_BACKEND"}  # no torch there: the default backend
    proc = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          check=False, env=env)  # fmt: skip
    assert proc.stdout.strip() == "ok", proc.stderr[-3000:]
