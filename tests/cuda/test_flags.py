"""ember.backends.cudnn flags and ember.use_deterministic_algorithms reach torch (at once, or when the torch
backend is created after them)."""

import os
import subprocess
import sys

import pytest

import ember


@pytest.fixture
def restore(torch):
    yield torch
    ember.backends.cudnn.benchmark = False
    ember.backends.cudnn.deterministic = False
    ember.use_deterministic_algorithms(False)


def test_flags_are_forwarded_to_torch(restore):
    torch = restore
    ember.backends.get("torch")
    ember.backends.cudnn.benchmark = True
    ember.backends.cudnn.deterministic = True
    assert torch.backends.cudnn.benchmark and torch.backends.cudnn.deterministic
    assert ember.backends.cudnn.benchmark is True
    ember.use_deterministic_algorithms(True, warn_only=True)
    assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
    assert ember.are_deterministic_algorithms_enabled() and ember.is_deterministic_algorithms_warn_only_enabled()
    with pytest.raises(TypeError, match="mode must be a bool"):
        ember.use_deterministic_algorithms("yes")
    assert ember.backends.cudnn.is_available() == (torch.cuda.is_available() and torch.backends.cudnn.is_available())


def test_flags_set_before_torch_is_imported_apply_when_its_backend_is_made(torch):
    code = (
        "import sys, ember\n"
        "ember.backends.cudnn.benchmark = True\n"
        "ember.use_deterministic_algorithms(True)\n"
        "assert 'torch' not in sys.modules\n"
        "ember.backends.get('torch')\n"
        "import torch\n"
        "print(torch.backends.cudnn.benchmark, torch.are_deterministic_algorithms_enabled())\n"
    )
    # torch must not be imported at start (EMBER_DEVICE=cuda, as make test-cuda sets it, would make its backend)
    env = {k: v for k, v in os.environ.items() if k not in ("EMBER_BACKEND", "EMBER_DEVICE")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["True", "True"]
