"""The floors are checked: the layers contract (``.importlinter``) and the line budget (``tools/line_budget.py``)
hold on the tree, and each fails on a planted violation."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from line_budget import over_budget  # noqa: E402

pytest.importorskip("importlinter")


def _lint_imports(root: Path, config: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run(
        [sys.executable, "-c", code, "--config", str(config), "--no-cache"],
        cwd=root, env={"PYTHONPATH": str(root / "src"), "PATH": ""}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_line_budget_holds_and_catches_a_long_file(tmp_path: Path) -> None:
    assert over_budget([ROOT / "src"]) == []
    (tmp_path / "ok.py").write_text("x = 1\n" * 500)
    (tmp_path / "long.py").write_text("x = 1\n" * 501)
    assert over_budget([tmp_path]) == [(tmp_path / "long.py", 501)]


def test_layers_contract_holds_and_fails_on_a_planted_upward_import(tmp_path: Path) -> None:
    assert _lint_imports(ROOT, ROOT / ".importlinter").returncode == 0
    shutil.copytree(ROOT / "src" / "ember", tmp_path / "src" / "ember", ignore=shutil.ignore_patterns("__pycache__"))
    dtype = tmp_path / "src" / "ember" / "_dtype.py"  # the lowest floor imports the nn floor
    dtype.write_text(dtype.read_text() + "\nfrom .nn import module as _planted  # noqa: E402, F401\n")
    r = _lint_imports(tmp_path, ROOT / ".importlinter")
    assert r.returncode == 1
    assert "ember._dtype is not allowed to import ember.nn" in r.stdout
