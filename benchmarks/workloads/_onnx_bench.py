"""Shared by the onnx_* workloads: the seeded plain-torch ResNet-18, its ONNX export cached on disk.

PyTorch runs the model eagerly; Ember runs ``ember.onnx.load`` of its ``torch.onnx.export`` (TorchScript
exporter, opset 17, dynamic batch); onnxruntime runs the same file (``--framework ort``, the fast anchor).
The export is made once per machine in the temp folder (in a child process: torch is never imported into
an Ember-on-NumPy process) and reused.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _pnnx_models import models

CACHE = Path(tempfile.gettempdir()) / "ember_onnx_bench"
PATH = CACHE / "resnet18.onnx"


def torch_model() -> Any:
    import torch

    torch.manual_seed(0)
    return models()["ResNet"]().eval()


def exported() -> Path:
    if PATH.exists():
        return PATH
    import torch

    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = CACHE / f"resnet18.{os.getpid()}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            torch_model(),
            (torch.rand(1, 3, 224, 224),),
            str(tmp),
            dynamo=False,
            opset_version=17,
            input_names=["x"],
            output_names=["y"],
            dynamic_axes={"x": {0: "b"}, "y": {0: "b"}},
        )
    os.replace(tmp, PATH)
    return PATH


def step_for(framework: str, device: str, batch: int) -> Callable[[], Any]:
    import numpy as np

    x = np.random.default_rng(0).random((batch, 3, 224, 224), dtype=np.float32)
    if framework == "torch":
        import torch

        model = torch_model().to(device)
        xt = torch.from_numpy(x).to(device)

        def step() -> Any:
            with torch.no_grad():
                return model(xt)

        return step
    if not PATH.exists():
        subprocess.run([sys.executable, __file__], check=True)
    if framework == "ort":
        import onnxruntime as ort

        opts = ort.SessionOptions()
        if os.environ.get("OMP_NUM_THREADS"):  # pinned threads (onnxruntime does not read the variable)
            opts.intra_op_num_threads = opts.inter_op_num_threads = int(os.environ["OMP_NUM_THREADS"])
        sess = ort.InferenceSession(str(PATH), opts, providers=["CPUExecutionProvider"])
        return lambda: sess.run(None, {"x": x})
    import ember
    import ember.onnx

    m = ember.onnx.load(PATH).to(device)
    xe = ember.tensor(x, device=device)

    def ember_step() -> Any:
        with ember.no_grad():
            return m(xe)

    return ember_step


def main(name: str, batch: int) -> None:
    """A workload's command line: ``--framework ember|torch|ort`` (the harness's, plus onnxruntime)."""
    import argparse

    from _harness import report

    p = argparse.ArgumentParser(description=f"benchmark workload {name}")
    p.add_argument("--framework", choices=["ember", "torch", "ort"], required=True)
    p.add_argument("--backend", choices=["numpy", "torch"], default="numpy", help="Ember's backend")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--seconds", type=float, default=3.0)
    args = p.parse_args()
    if args.framework == "ember":
        os.environ.setdefault("EMBER_BACKEND", args.backend)
    fw = args.framework
    args.framework = "torch" if fw == "ort" else fw  # the harness syncs CUDA per framework; ort is CPU here
    step = step_for(fw, args.device, batch)
    args.framework = fw
    report(name, args, step, unit="ms", per_step=1)


if __name__ == "__main__":
    print(exported())
