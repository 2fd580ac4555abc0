"""The documentation site: every public name has a docstring, and ``mkdocs build --strict`` (warnings are errors)
builds the site from ``docs/`` and the docstrings (where MkDocs is installed; ``make test`` installs it)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# the packages a user imports; their public names are ``__all__`` (or, without one, the names not starting with _)
PUBLIC = [
    "ember", "ember.autograd", "ember.autograd.functional", "ember.nn", "ember.nn.functional", "ember.nn.init",
    "ember.optim", "ember.optim.lr_scheduler", "ember.data", "ember.data.transforms", "ember.train", "ember.record",
    "ember.serialization", "ember.models", "ember.models.gpt2", "ember.models.bert", "ember.utils.tensorboard",
    "ember.distributions", "ember.linalg", "ember.sparse", "ember.backends", "ember.pnnx", "ember.multiprocessing",
    "ember.cuda", "ember.accelerator", "ember.testing", "ember.fx", "ember.fx.node", "ember.fx.graph",
    "ember.fx.proxy", "ember.fx.graph_module", "ember.fx.interpreter", "ember.fx.passes.shape_prop",
    "ember.fx.subgraph_rewriter", "ember.fx.experimental.optimization",
]  # fmt: skip


def undocumented() -> list[str]:
    """Ember's public classes and functions without a docstring (inherited ones count; others' objects skipped)."""
    out = []
    for name in PUBLIC:
        module = importlib.import_module(name)
        names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
        for attr in names:
            obj = getattr(module, attr, None)
            if inspect.ismodule(obj) or not (inspect.isclass(obj) or inspect.isroutine(obj)):
                continue
            if not str(getattr(obj, "__module__", "")).startswith("ember"):
                continue  # re-exported from Python or another library
            if not (inspect.getdoc(obj) or "").strip():
                out.append(f"{name}.{attr} ({obj.__module__})")
    return sorted(set(out))


def test_every_public_name_has_a_docstring():
    missing = undocumented()
    assert not missing, f"{len(missing)} public names without a docstring:\n  " + "\n  ".join(missing)


@pytest.mark.skipif(os.environ.get("EMBER_BACKEND", "numpy") != "numpy", reason="the site does not depend on the "
                    "backend: built once, in the NumPy run")  # fmt: skip
def test_the_site_builds_with_warnings_as_errors(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings_handlers") is None:
        pytest.skip("MkDocs and mkdocstrings are not installed (pip install 'ember[docs]'; make test installs them)")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], capture_output=True, text=True, timeout=600,
                          check=False, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    site = tmp_path / "site"
    for page in ("coming-from-pytorch", "coming-from-burn", "api/nn", "api/data", "api/models"):
        assert (site / page / "index.html").exists(), page
    reference = (site / "api" / "data" / "index.html").read_text()
    assert 'id="ember.data.ImageFolder"' in reference and 'id="ember.data.transforms.RandomResizedCrop"' in reference
