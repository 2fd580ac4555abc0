"""``make test-accel``'s two runs (tests/conftest.py) take effect: torch-CPU on the accelerator's paths, and torch-CPU
as the default device beside NumPy's CPU (checked in a pytest of their own)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest


def test_accelerator_path_and_fake_device_runs_are_in_effect():
    pytest.importorskip("torch")
    # not an xdist worker either: pytest-benchmark 5.2 reads PYTEST_XDIST_WORKER at configure and warns (an error here)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBER_", "PYTEST_XDIST_"))}
    probe = Path(__file__).with_name("accel_probe.py")
    args = [sys.executable, "-m", "pytest", "-p", "no:xdist", "--accelerator-paths", "--fake-device", str(probe)]
    run = subprocess.run(args, cwd=probe.parent.parent, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout + run.stderr
