"""Run by ``tests/test_accel_runs.py`` in a pytest of its own (not collected by the suite: no ``test_`` prefix)."""

import os

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.skipif(
    os.environ.get("EMBER_TEST_ACCEL") != "1" or os.environ.get("EMBER_TEST_FAKE_DEVICE") != "1",
    reason="a probe: tests/test_accel_runs.py runs it with --accelerator-paths --fake-device",
)


def test_the_runs_are_in_effect():
    torch_backend = ember.backends.get("torch")
    assert os.environ["EMBER_TEST_ACCEL"] == "1" and not torch_backend.cheap_sync and not torch_backend.host_checks
    assert os.environ["EMBER_TEST_FAKE_DEVICE"] == "1"
    assert ember.zeros(2)._backend is torch_backend  # the default device
    assert ember.from_numpy(np.zeros(2))._backend.name == "numpy"
    assert ember.zeros(2, device="cpu")._backend.name == "numpy"
