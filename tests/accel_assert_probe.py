"""Run by ``tests/test_accel_runs.py`` in a pytest of its own with ``--accelerator-paths`` (not collected by the
suite: no ``test_`` prefix): the device-side-assert detector (``tests/_device_asserts.py``) fails the ``planted``
tests, and only those."""

import os

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.skipif(
    os.environ.get("EMBER_TEST_ACCEL") != "1",
    reason="a probe: tests/test_accel_runs.py runs it with --accelerator-paths",
)


def _on_torch(a):
    return ember.tensor(a, device=ember.backends.get("torch").device)


def test_planted_index_computed_on_the_device_fails_though_caught():
    """An index Ember cannot judge (computed on the device) reaches torch's kernel: on the CPU an IndexError the
    test accepts; on CUDA a device-side assert. The detector fails the test."""
    x, i = _on_torch(np.zeros((4, 3), np.float32)), _on_torch(np.arange(2)) + 3
    with pytest.raises(Exception):  # noqa: B017 - any error: the detector must fail the test all the same
        x[i]


def test_planted_class_index_fails():
    logits, target = _on_torch(np.zeros((2, 3), np.float32)), _on_torch(np.array([0, 1])) + 2
    ember.nn.functional.cross_entropy(logits, target)


def test_planted_class_index_at_a_compiled_replay_fails():
    """A target written on the device after capture reaches the kernel at replay (the replay's frames belong to no
    module: the program ember.compile generated)."""
    logits, target = _on_torch(np.zeros((2, 3), np.float32)), _on_torch(np.array([0, 1])) + 0
    step = ember.compile(lambda: ember.nn.functional.cross_entropy(logits, target))
    for _ in range(2):
        step()
    target[1] = 3
    with pytest.raises(Exception):  # noqa: B017 - any error: the detector must fail the test all the same
        step()


def test_a_host_known_bad_class_index_is_refused_by_ember_before_the_kernel():
    logits = _on_torch(np.zeros((2, 3, 2), np.float32))
    with pytest.raises(IndexError, match="nll_loss: target 3 is out of range for 3 classes"):
        ember.nn.functional.cross_entropy(logits, _on_torch(np.array([[0, 1], [3, 2]])).mT)


def test_an_index_in_range_passes():
    x, i = _on_torch(np.arange(12.0).reshape(4, 3)), _on_torch(np.arange(2)) + 2
    np.testing.assert_array_equal(x[i].numpy(), [[6, 7, 8], [9, 10, 11]])


def test_a_host_known_bad_index_is_refused_by_ember_before_the_kernel():
    with pytest.raises(IndexError, match="out of range"):
        _on_torch(np.zeros((4, 3), np.float32))[_on_torch(np.array([0, 4]))]


def test_the_tests_own_torch_reference_is_left_to_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(IndexError):
        torch.zeros(4)[torch.tensor([4])]
