"""``ember.as_torch()`` / ``python -m ember.run_as_torch program.py``: ``import torch`` gives Ember, under the name
``torch`` and with a version libraries' checks read as the PyTorch release Ember follows."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ember
from ember.torch_version import TORCH_API, TorchVersion

SRC = str(Path(ember.__file__).resolve().parents[1])

PROGRAM = textwrap.dedent("""
    import sys
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset
    import ember
    assert torch.__name__ == "torch" and sys.modules["torch"] is torch
    assert torch.__version__ == "{api}+ember.{ember}", torch.__version__
    assert torch.__version__ >= "2.2" and torch.__version__ >= (2, 0) and torch.__version__ < "3"
    assert nn.Linear is ember.nn.Linear and F.relu is ember.nn.functional.relu and torch.Tensor is ember.Tensor
    assert sum(1 for _ in DataLoader(TensorDataset(torch.ones(4, 2)), batch_size=2)) == 2
    assert ember.as_torch() is torch  # (again: the same module)
    print("OK", sys.argv[1:])
""")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    env.pop("EMBER_BACKEND", None)  # (the torch backend is what the alias makes unavailable)
    env.pop("EMBER_DEVICE", None)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_a_program_runs_with_torch_as_ember(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM.format(api=TORCH_API, ember=ember.__version__))
    r = _run(["-m", "ember.run_as_torch", "prog.py", "a", "--b"], tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "OK ['a', '--b']", r.stdout + r.stderr


def test_refused_once_real_torch_is_imported(tmp_path):
    pytest.importorskip("torch")
    code = "import torch, ember\ntry:\n    ember.as_torch()\nexcept RuntimeError as e:\n    print('refused', e)\n"
    r = _run(["-c", code], tmp_path)
    assert r.returncode == 0 and "refused as_torch: PyTorch is already imported" in r.stdout, r.stdout + r.stderr


def test_a_library_gating_on_the_torch_version_runs(tmp_path):
    pytest.importorskip("einx")  # (refuses torch < 2.2: under sys.modules["torch"] = ember it read 0.1.0)
    (tmp_path / "prog.py").write_text(
        "import torch, einx\n"
        "out = einx.where('n, b n, -> b n', torch.tensor([True, False]), torch.ones(3, 2), 0.0)\n"
        "assert out.tolist() == [[1.0, 0.0]] * 3\nprint('OK')\n"
    )
    r = _run(["-m", "ember.run_as_torch", "prog.py"], tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr


CASES = [("2.13.0+cpu", ">=", "2.2"), ("2.13.0+cpu", ">=", (2, 2)), ("2.13.0+cpu", "<", "3.0"),
         ("2.13.0+cpu", "==", "2.13.0"), ("2.13.0+cpu", "==", "2.13.0+cpu"), ("2.13.0+cpu", ">", "2.13"),
         ("2.13.0+cpu", ">=", "2.13.0a0"), ("2.1.0", "<", "2.10"), ("2.1.0", "==", (2, 1, 0)),
         ("1.13.1", "<=", "1.13.1")]  # fmt: skip


@pytest.mark.parametrize("v,op,other", CASES)
def test_torch_version_compares_as_torchs(v, op, other):
    torch = pytest.importorskip("torch")
    ops = {">=": "__ge__", "<": "__lt__", "==": "__eq__", ">": "__gt__", "<=": "__le__"}
    want = getattr(torch.torch_version.TorchVersion(v), ops[op])(other)
    assert getattr(TorchVersion(v), ops[op])(other) == want
    assert str(TorchVersion(v)) == v and isinstance(TorchVersion(v), str)
