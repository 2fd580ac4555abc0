"""Pyro on Ember, with ``torch`` a package that forwards to Ember (Pyro's ``patch_dependency`` asserts that the
module it patches is named ``torch``, so ``sys.modules["torch"] = ember`` is refused at ``import pyro``): the same
program (``pyro_prog.py``) runs under PyTorch and under Ember on the same data and gives the same values.

Running it found: ``as_tensor(t, dtype=...)`` dropping ``t``'s graph (Pyro's HalfCauchy prior then added no
gradient: a silently different SVI step), attributes set on tensors (Pyro's param store sets ``.unconstrained``),
``torch.autograd.function.once_differentiable``, ``distributions.utils._sum_rightmost``, ``register_kl`` of a mixin
class, ``serialization.MAP_LOCATION`` and ``_C._get_tracing_state``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember

pytest.importorskip("torch")
pytest.importorskip("pyro")

SRC = str(Path(ember.__file__).resolve().parents[1])
PROG = str(Path(__file__).with_name("pyro_prog.py"))
SHIM = "import ember\nfrom ember import *  # noqa\n\n\ndef __getattr__(name):\n    return getattr(ember, name)\n"


def _run(out: str, mode: str, shim: str | None) -> subprocess.CompletedProcess[str]:
    path = [SRC] if shim is None else [shim, SRC]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    env.pop("EMBER_BACKEND", None)  # the torch backend is what the alias makes unavailable: NumPy serves Ember here
    return subprocess.run([sys.executable, PROG, out, mode], env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("pyro")
    (out / "shim" / "torch").mkdir(parents=True)
    (out / "shim" / "torch" / "__init__.py").write_text(SHIM)
    for mode, shim in (("save", None), ("load", str(out / "shim"))):  # real PyTorch, then the package forwarding
        r = _run(str(out), mode, shim)
        assert r.returncode == 0 and "done" in r.stdout, r.stdout[-3000:] + r.stderr[-5000:]
    return np.load(out / "save.npz"), np.load(out / "load.npz")


def test_svi_map_fit_matches_pytorch(results):
    torch_run, ember_run = results
    assert set(torch_run) == set(ember_run)
    assert ember_run["losses"][-1] < ember_run["losses"][0] - 10  # it fits
    for k in ("losses", "w", "sigma", "sigma_unconstrained", "restored_w"):
        np.testing.assert_allclose(ember_run[k], torch_run[k], rtol=1e-10, atol=1e-10, err_msg=k)
    np.testing.assert_array_equal(ember_run["restored_w"], ember_run["w"])  # the param store's state came back


def test_log_density_and_constraint_transforms_match_pytorch(results):
    torch_run, ember_run = results
    keys = [k for k in torch_run if k.startswith(("log_prob", "site_", "biject.", "logdet.", "inverse.", "check."))]
    assert len(keys) == 15
    for k in keys:
        assert ember_run[k].dtype == torch_run[k].dtype, k
        np.testing.assert_allclose(ember_run[k], torch_run[k], rtol=1e-12, atol=1e-12, err_msg=k)
