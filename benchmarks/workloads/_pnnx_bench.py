"""Shared by the pnnx_* workloads: the same seeded torch model for both sides, its pnnx export cached on disk.

PyTorch runs the plain-torch model eagerly; Ember runs ``ember.pnnx.load`` of that model's export
(optlevel 2, what pnnx writes by default). The export needs torch and the ``pnnx`` package; it is made
once per machine in the temp folder and reused (written to a private folder, then renamed into place).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _pnnx_models import export, finish, models

CACHE = Path(tempfile.gettempdir()) / "ember_pnnx_bench"
SHAPES = {"resnet18": (3, 224, 224), "yolov5s": (3, 640, 640)}


def torch_model(kind: str) -> tuple[Any, tuple[int, ...]]:
    import torch

    torch.manual_seed(0)
    if kind == "resnet18":
        return models()["ResNet"]().eval(), SHAPES[kind]
    return models()["YOLO"]().eval(), SHAPES[kind]


def exported(kind: str) -> Path:
    """The cached ``{kind}.pnnx.param`` (exported at batch 1; Ember's loader keeps the batch free)."""
    param = CACHE / f"{kind}.pnnx.param"
    if param.exists():
        return param
    import torch

    model, shape = torch_model(kind)
    CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=CACHE))
    try:
        finish(export(model, torch.rand(1, *shape), work / f"{kind}.pt"), work / f"{kind}_o2.pnnx.param")
        os.replace(work / f"{kind}_o2.pnnx.bin", CACHE / f"{kind}.pnnx.bin")
        os.replace(work / f"{kind}_o2.pnnx.param", param)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return param


def step_for(args: argparse.Namespace, kind: str, batch: int) -> Callable[[], Any]:
    """One inference step (no grad) of ``kind`` on a synthetic batch, for the framework asked for."""
    import numpy as np

    shape = SHAPES[kind]
    x = np.random.default_rng(0).random((batch, *shape), dtype=np.float32)
    if args.framework == "torch":
        import torch

        model, _ = torch_model(kind)
        model = model.to(args.device)
        xt = torch.from_numpy(x).to(args.device)

        def step() -> Any:
            with torch.no_grad():
                return model(xt)

        return step
    import ember
    import ember.pnnx

    param = CACHE / f"{kind}.pnnx.param"
    if not param.exists():  # export in a child process, so that torch is never imported here
        subprocess.run([sys.executable, __file__, kind], check=True)
    m = ember.pnnx.load(param).to(args.device)
    xe = ember.tensor(x, device=args.device)

    def ember_step() -> Any:
        with ember.no_grad():
            return m(xe)

    return ember_step


if __name__ == "__main__":
    print(exported(sys.argv[1]))
