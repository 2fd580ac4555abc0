"""Classify an image with a ResNet-18 exported by pnnx, through ``ember.pnnx`` (the API, not the CLI).

    python examples/pnnx_resnet18.py resnet18.pnnx.param cat.jpg [labels.txt]

Without arguments it makes its own model: a plain-torch ResNet-18 with random weights exported by the
``pnnx`` package (``pip install --no-deps pnnx``; needs torch), run on a synthetic image, and checks
Ember's logits against torch's.
"""

import sys
import tempfile
from pathlib import Path

import numpy as np

import ember
import ember.pnnx
from ember.pnnx._vision import classify_input, load_image, top_k


def demo_model(folder: Path) -> tuple[Path, np.ndarray, object]:
    """Export a random-weight ResNet-18 with pnnx; return its param path, an image and the torch model."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "workloads"))
    from _pnnx_models import export, finish, models

    torch.manual_seed(0)
    net = models()["ResNet"]().eval()
    x = torch.randn(1, 3, 224, 224)
    finish(export(net, x, folder / "resnet18.pt"), folder / "resnet18_o2.pnnx.param")
    image = (np.random.default_rng(0).random((256, 320, 3)) * 255).astype(np.uint8)
    return folder / "resnet18_o2.pnnx.param", image, net


with tempfile.TemporaryDirectory() as tmp:
    if len(sys.argv) >= 3:
        param, image, reference = Path(sys.argv[1]), load_image(sys.argv[2]), None
    else:
        param, image, reference = demo_model(Path(tmp))
    labels = Path(sys.argv[3]).read_text().splitlines() if len(sys.argv) > 3 else []

    model = ember.pnnx.load(param)  # weights from resnet18.pnnx.bin beside it
    x = classify_input(image, 224)  # resize, centre crop, ImageNet normalisation: (1, 3, 224, 224)
    with ember.no_grad():
        logits = model(ember.tensor(x))
    for rank, (c, p) in enumerate(top_k(logits.numpy()[0], 5), 1):
        print(f"{rank}. {labels[c] if c < len(labels) else f'class {c}'}  {p:.4f}")

    if reference is not None:
        import torch

        with torch.no_grad():
            want = reference(torch.from_numpy(x)).numpy()
        print(f"max |ember - torch| = {np.abs(logits.numpy() - want).max():.2e}")
