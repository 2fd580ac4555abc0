"""Fixtures for ember.pnnx: hand-written model files, and small torch models exported with the pnnx tool.

The torch models (``benchmarks/workloads/_pnnx_models.py``, plain torch: torchvision does not run with the
pinned CPU torch) are a ResNet-18-shaped classifier and a YOLOv5s-shaped detector (Focus stem, C3 and
SPPF blocks, an FPN with upsampling, a 3-map head returning the decoded boxes and the raw maps), made
small so that the exports (one pnnx process each, run concurrently) and the comparisons stay fast.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

#: Small versions of ResNet-18 and YOLOv5s (same structure, fewer channels and blocks).
RESNET = {"widths": (8, 16, 16, 32), "blocks": 1, "classes": 10}
YOLO = {"w": 8, "n": 1, "nc": 3}


def write_pnnx(dir: Path, name: str, lines: list[str], weights: dict[str, np.ndarray] | None = None) -> Path:
    """Write ``name.pnnx.param`` (header computed) and ``name.pnnx.bin`` (stored zip); return the param path."""
    operands = {tok for line in lines for tok in _operands(line)}
    param = dir / f"{name}.pnnx.param"
    param.write_text("7767517\n" + f"{len(lines)} {len(operands)}\n" + "\n".join(lines) + "\n")
    with zipfile.ZipFile(dir / f"{name}.pnnx.bin", "w", zipfile.ZIP_STORED) as zf:
        for key, arr in (weights or {}).items():
            zf.writestr(key, np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes())
    return param


def _operands(line: str) -> list[str]:
    t = line.split()
    n_in, n_out = int(t[2]), int(t[3])
    return t[4 + n_in : 4 + n_in + n_out]


def _shared_models() -> Any:
    """``benchmarks/workloads/_pnnx_models.py``: the plain-torch ResNet/YOLOv5 the benchmarks use too."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "workloads" / "_pnnx_models.py"
    spec = importlib.util.spec_from_file_location("_pnnx_models", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def torch_models() -> dict[str, Any]:
    pytest.importorskip("torch")
    return _shared_models().models()


@pytest.fixture(scope="session")
def exported(tmp_path_factory: pytest.TempPathFactory, torch_models: dict[str, Any]) -> dict[str, Any]:
    """The test models exported with pnnx at optlevel 1 and 2: name -> (torch model, param path, input)."""
    pytest.importorskip("pnnx")
    import torch

    torch.manual_seed(0)
    shared = _shared_models()
    randomise_bn = shared.randomise_bn
    models = {
        "resnet": (randomise_bn(torch_models["ResNet"](**RESNET)), torch.randn(1, 3, 32, 32)),
        "yolo": (randomise_bn(torch_models["YOLO"](**YOLO)), torch.rand(1, 3, 64, 64)),
        "yolo_raw": (randomise_bn(torch_models["YOLO"](**YOLO, decode=False)), torch.rand(1, 3, 64, 64)),
    }
    # xdist workers of one run share one export (the models above are seeded, so every worker builds the same)
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    d = root / "pnnx_export"
    out = {}
    with open(root / "pnnx_export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = (d / "done").exists()
        d.mkdir(exist_ok=True)
        jobs = []
        for name, (model, x) in models.items():
            for level in (2, 1) if name != "yolo_raw" else (2,):
                key = f"{name}_o{level}"
                out[key] = (model, d / f"{key}.pnnx.param", x)
                if not done:
                    jobs.append((key, shared.export(model, x, d / f"{name}.pt", level, trace=level == 2)))
        for key, proc in jobs:
            shared.finish(proc, out[key][1])
        (d / "done").touch()
    return out
