"""``ember pnnx run`` option checks and ``ember info`` with a bad EMBER_BACKEND (issue 29)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from ember.cli import main

from .conftest import write_pnnx


def _image(tmp_path):
    from PIL import Image

    path = tmp_path / "img.png"
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(path)
    return path


@pytest.mark.parametrize(("option", "message"), [
    (["--size", "0"], "--size must be >= 1 (got 0)"),
    (["--size", "-3"], "--size must be >= 1 (got -3)"),
    (["--topk", "-1"], "--topk must be >= 1 (got -1)"),
    (["--topk", "0"], "--topk must be >= 1 (got 0)"),
    (["--conf", "-0.5"], "--conf must be >= 0 (got -0.5)"),
])  # fmt: skip
def test_run_refuses_sizes_and_counts_below_one(tmp_path, capsys, option, message):
    p = write_pnnx(tmp_path, "m", ["pnnx.Input in0 0 1 0 #0=(1,3,8,8)f32", "pnnx.Output out 1 0 0"])
    assert main(["pnnx", "run", str(p), "--image", str(tmp_path / "x.png"), *option]) == 2
    assert capsys.readouterr().err.strip() == f"ember: {message}"


def test_run_refuses_an_input_that_cannot_fit_in_memory(tmp_path, capsys):
    pytest.importorskip("PIL")
    # 11,176 GiB: more than any machine's memory (100000x100000, 112 GiB, fitted a 128 GiB GPU machine's)
    p = write_pnnx(tmp_path, "big", ["pnnx.Input in0 0 1 0 #0=(1,3,1000000,1000000)f32", "nn.ReLU r 1 1 0 1",
                                     "pnnx.Output out 1 0 1"])  # fmt: skip
    assert main(["pnnx", "run", str(p), "--image", str(_image(tmp_path)), "--task", "classify"]) == 1
    err = capsys.readouterr().err
    assert "input size 1000000x1000000" in err and "(1, 3, 1000000, 1000000)" in err and "GiB" in err, err


def test_topk_prints_exactly_k(tmp_path, capsys):
    pytest.importorskip("PIL")
    w = np.eye(10, 3, dtype=np.float32)
    p = write_pnnx(tmp_path, "c", ["pnnx.Input in0 0 1 0 #0=(1,3,4,4)f32",
                                   "F.adaptive_avg_pool2d pool 1 1 0 1 output_size=(1,1)",
                                   "torch.flatten f 1 1 1 2 start_dim=1 end_dim=-1",
                                   "nn.Linear fc 1 1 2 3 bias=False in_features=3 out_features=10 @weight=(10,3)f32",
                                   "pnnx.Output out 1 0 3"], {"fc.weight": w})  # fmt: skip
    assert main(["pnnx", "run", str(p), "--image", str(_image(tmp_path)), "--topk", "10", "--task", "classify"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert [line.split(".")[0] for line in lines] == [str(i) for i in range(1, 11)]


@pytest.mark.parametrize("default_device", [None, "cuda"])
def test_info_with_a_bad_ember_backend_is_one_line(default_device):
    """Also with EMBER_DEVICE set (as ``make test-cuda`` runs): the backend's error, not a traceback at import."""
    env = {k: v for k, v in os.environ.items() if k != "EMBER_DEVICE"}
    env["EMBER_BACKEND"] = "bogus"
    if default_device is not None:
        env["EMBER_DEVICE"] = default_device
    r = subprocess.run([sys.executable, "-c", "import sys, ember.cli; sys.exit(ember.cli.main(['info']))"],
                       env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().splitlines() == [
        "ember: EMBER_BACKEND='bogus' cannot be used: unknown backend 'bogus'; registered backends: numpy, torch, "
        "meta, cupy (set it to one of them, or unset it)"
    ]
