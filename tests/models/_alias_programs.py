"""Running a library's program under real PyTorch and under Ember through the alias, for the program tests of
``tests/models`` (``*_prog.py``: ``prog.py OUT save`` under torch writes ``OUT/save.npz`` and the weights; ``prog.py
OUT load`` with ``sys.modules["torch"] = ember`` loads them and writes ``OUT/load.npz``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember

SRC = str(Path(ember.__file__).resolve().parents[1])
ALIAS = (
    "import sys, runpy, ember; sys.modules['torch'] = ember; sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def run(args: list[str], cwd: str | None = None) -> None:
    """``python ARGS`` with this tree's Ember first; it must exit 0 and print ``done``."""
    env = dict(os.environ, PYTHONPATH=SRC, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    env.pop("EMBER_BACKEND", None)  # the torch backend is what the alias makes unavailable: NumPy serves Ember here
    r = subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "done" in r.stdout, r.stdout[-3000:] + r.stderr[-5000:]


def save_and_load(prog: str, out: str, cwd: str | None = None) -> tuple[Any, Any]:
    """``prog`` under real PyTorch (``save``), then under Ember through the alias (``load``): both results."""
    run([prog, out, "save"], cwd)
    run(["-c", ALIAS, prog, out, "load"], cwd)
    return np.load(f"{out}/save.npz"), np.load(f"{out}/load.npz")


def results_fixture(prog: str, in_its_folder: bool = False) -> Any:
    """A module-scoped ``results`` fixture: ``prog`` (a ``*_prog.py`` beside the tests) under real PyTorch, then
    through the alias (``save_and_load``), with the output folder as the programs' working directory when
    ``in_its_folder``."""
    path = str(Path(__file__).with_name(prog))

    @pytest.fixture(scope="module")
    def results(tmp_path_factory: Any) -> tuple[Any, Any]:
        out = str(tmp_path_factory.mktemp(Path(prog).stem))
        return save_and_load(path, out, out if in_its_folder else None)

    return results
