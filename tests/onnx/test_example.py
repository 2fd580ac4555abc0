"""``examples/onnx_roundtrip.py`` runs end to end with tiny settings."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest


@pytest.mark.process_default  # a whole program on the process default
def test_onnx_roundtrip_example(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("sklearn")
    path = Path(__file__).resolve().parents[2] / "examples" / "onnx_roundtrip.py"
    out = runpy.run_path(str(path))["main"](["--epochs", "1", "--limit", "256", "--out", str(tmp_path)])
    assert out["diff"] < 1e-4 and out["agree"] == 1.0
    assert abs(out["before"] - out["after"]) < 0.5 and out["loss"] > 0
    assert (tmp_path / "digits_cnn.onnx").exists() and (tmp_path / "fine_tuned.mpk").exists()
