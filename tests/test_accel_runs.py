"""``make test-accel``'s two runs (tests/conftest.py) take effect: torch-CPU on the accelerator's paths, and torch-CPU
as the default device beside NumPy's CPU; and the accelerator-path run's detector of device-side asserts
(tests/_device_asserts.py) fails a test whose index would fire one on CUDA (checked in a pytest of their own).

The pytest started here runs without xdist and without pytest-benchmark (``-p no:benchmark``: where it is
installed, it warns that xdist is on, which the suite's ``filterwarnings = error`` turns into an INTERNALERROR)."""

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
    planted = probe.with_name("accel_assert_probe.py")
    args = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:benchmark", "-rA", "--accelerator-paths",
            "--fake-device", str(probe), str(planted)]  # fmt: skip
    run = subprocess.run(args, cwd=probe.parent.parent, env=env, capture_output=True, text=True, timeout=300)
    out = run.stdout + run.stderr
    outcomes = {line.split()[1].split("::")[-1]: line.split()[0] for line in run.stdout.splitlines()
                if line.startswith(("PASSED ", "FAILED ", "ERROR ", "SKIPPED "))}  # fmt: skip
    planted_ = {
        "test_planted_index_computed_on_the_device_fails_though_caught",
        "test_planted_class_index_fails",
        "test_planted_class_index_at_a_compiled_replay_fails",
    }
    assert outcomes == {"test_the_runs_are_in_effect": "PASSED", **dict.fromkeys(planted_, "FAILED"),
                        "test_an_index_in_range_passes": "PASSED",
                        "test_a_host_known_bad_index_is_refused_by_ember_before_the_kernel": "PASSED",
                        "test_a_host_known_bad_class_index_is_refused_by_ember_before_the_kernel": "PASSED",
                        "test_the_tests_own_torch_reference_is_left_to_torch": "PASSED"}, out  # fmt: skip
    assert "__getitem__: index in [3, 4] for dim 0 of size 4: on CUDA a device-side assert" in out, out
    assert "nll_loss_forward: index in [2, 3] for 3 classes: on CUDA a device-side assert" in out, out
    assert "nll_loss_forward: index in [0, 3] for 3 classes: on CUDA a device-side assert" in out, out
