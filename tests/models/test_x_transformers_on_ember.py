"""x-transformers on Ember through the switch PyTorch users make (``sys.modules["torch"] = ember`` before importing
it): the same program (``x_transformers_prog.py``) runs under PyTorch and under Ember, with the same weights, and
gives the same results. Running it found ``ModuleList`` refusing None entries (``norms = ModuleList([...None...])``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember

pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("x_transformers")

SRC = str(Path(ember.__file__).resolve().parents[1])
PROG = str(Path(__file__).with_name("x_transformers_prog.py"))
ALIAS = (
    "import sys, runpy, ember; sys.modules['torch'] = ember; sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def _run(args: list[str]) -> None:
    env = dict(os.environ, PYTHONPATH=SRC, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    env.pop("EMBER_BACKEND", None)  # the torch backend is what the alias makes unavailable: NumPy serves Ember here
    r = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "done" in r.stdout, r.stdout[-3000:] + r.stderr[-5000:]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("x_transformers"))
    _run([PROG, out, "save"])  # real PyTorch: builds the models, saves their weights
    _run(["-c", ALIAS, PROG, out, "load"])  # torch aliased to Ember: the same program, the saved weights
    return np.load(f"{out}/save.npz"), np.load(f"{out}/load.npz")


def test_decoder_forward_backward_step_and_generate(results):
    torch_run, ember_run = results
    assert set(torch_run) == set(ember_run)
    np.testing.assert_allclose(ember_run["dec_logits"], torch_run["dec_logits"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(ember_run["dec_loss"], torch_run["dec_loss"], atol=1e-6, rtol=0)
    grads = [k for k in torch_run if k.startswith("dec_grad.")]
    assert len(grads) > 20
    for k in grads:
        if torch_run[k].dtype.kind == "U":  # no gradient
            assert ember_run[k].dtype.kind == "U", k
            continue
        np.testing.assert_allclose(ember_run[k], torch_run[k], atol=1e-6, rtol=1e-4, err_msg=k)
    for k in (k for k in torch_run if k.startswith("dec_step.")):
        np.testing.assert_allclose(ember_run[k], torch_run[k], atol=1e-5, rtol=1e-4, err_msg=k)
    np.testing.assert_array_equal(ember_run["generate"], torch_run["generate"])
    assert ember_run["generate"].shape == (2, 5)


def test_encoder_embeddings(results):
    torch_run, ember_run = results
    np.testing.assert_allclose(ember_run["enc_out"], torch_run["enc_out"], atol=1e-5, rtol=0)
