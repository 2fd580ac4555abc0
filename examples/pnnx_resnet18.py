"""Classify an image with a ResNet-18 exported by pnnx, through ``ember.pnnx`` (the API, not the CLI).

    python examples/pnnx_resnet18.py resnet18.pnnx.param cat.jpg [--labels imagenet_classes.txt]

Without a model it makes its own: a plain-torch ResNet-18 with random weights exported by the ``pnnx``
package (``pip install --no-deps pnnx``; needs torch), run on a synthetic image, and checks Ember's
logits against torch's.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

import ember
import ember.pnnx
from ember.pnnx._vision import classify_input, load_image, top_k


def demo_model(folder: Path) -> tuple[Path, object]:
    """Export a random-weight ResNet-18 with pnnx; return its param path and the torch model."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "workloads"))
    from _pnnx_models import export, finish, models

    torch.manual_seed(0)
    net = models()["ResNet"]().eval()
    finish(export(net, torch.randn(1, 3, 224, 224), folder / "resnet18.pt"), folder / "resnet18_o2.pnnx.param")
    return folder / "resnet18_o2.pnnx.param", net


def main(argv: list[str] | None = None) -> list[tuple[int, float]]:
    p = argparse.ArgumentParser(description="ResNet-18 classification through ember.pnnx")
    p.add_argument("model", nargs="?", type=Path, help="MODEL.pnnx.param (default: export a random ResNet-18)")
    p.add_argument("image", nargs="?", type=Path, help="an image file (default: a synthetic one)")
    p.add_argument("--labels", type=Path, help="class names, one per line")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        reference = None
        param = args.model
        if param is None:
            param, reference = demo_model(Path(tmp))
        if args.image is not None:
            image = load_image(args.image)
        else:
            image = (np.random.default_rng(0).random((256, 320, 3)) * 255).astype(np.uint8)
        labels = args.labels.read_text().splitlines() if args.labels else []

        model = ember.pnnx.load(param)  # weights from the .pnnx.bin beside it
        x = classify_input(image, 224)  # resize, centre crop, ImageNet normalisation: (1, 3, 224, 224)
        with ember.no_grad():
            logits = model(ember.tensor(x))
        top = top_k(logits.numpy()[0], 5)
        for rank, (c, prob) in enumerate(top, 1):
            print(f"{rank}. {labels[c] if c < len(labels) else f'class {c}'}  {prob:.4f}")
        if reference is not None:
            import torch

            with torch.no_grad():
                want = reference(torch.from_numpy(x)).numpy()
            print(f"max |ember - torch| = {np.abs(logits.numpy() - want).max():.2e}")
    return top


if __name__ == "__main__":
    main()
