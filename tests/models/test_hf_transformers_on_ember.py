"""Hugging Face transformers on Ember through the switch PyTorch users make (``sys.modules["torch"] = ember`` before
``import transformers``): the same program (``hf_transformers_prog.py``) runs under PyTorch and under Ember, with
the same weights, and gives the same results."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("safetensors")

SRC = str(Path(ember.__file__).resolve().parents[1])
PROG = str(Path(__file__).with_name("hf_transformers_prog.py"))
ALIAS = (
    "import sys, runpy, ember; sys.modules['torch'] = ember; sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def _run(args: list[str]) -> None:
    env = dict(os.environ, PYTHONPATH=SRC, OMP_NUM_THREADS="1")
    env.pop("EMBER_BACKEND", None)  # the torch backend is what the alias makes unavailable: NumPy serves Ember here
    r = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "done" in r.stdout, r.stdout[-3000:] + r.stderr[-5000:]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("hf"))
    _run([PROG, out, "save"])  # real PyTorch: builds the models, saves their weights
    _run(["-c", ALIAS, PROG, out, "load"])  # torch aliased to Ember: the same program, the saved weights
    return np.load(f"{out}/save.npz"), np.load(f"{out}/load.npz")


def test_bert_forward_backward_and_adamw_step(results):
    torch_run, ember_run = results
    assert set(torch_run) == set(ember_run)
    np.testing.assert_allclose(ember_run["bert_hidden"], torch_run["bert_hidden"], atol=1e-5, rtol=0)
    for k in (k for k in torch_run if k.startswith("bert_grad.")):
        if torch_run[k].dtype.kind == "U":  # no gradient (the pooler is not used by last_hidden_state)
            assert ember_run[k].dtype.kind == "U", k
            continue
        np.testing.assert_allclose(ember_run[k], torch_run[k], atol=1e-5, rtol=1e-4, err_msg=k)
    for k in (k for k in torch_run if k.startswith("bert_step.")):
        if "attention.self.key.bias" in k:  # its true gradient is 0 (softmax ignores a shift of every score): AdamW
            # divides rounding noise by its own size, so both steps are lr-sized noise; the gradients agree above
            assert np.abs(torch_run[k.replace("step", "grad")]).max() < 1e-6
            continue
        np.testing.assert_allclose(ember_run[k], torch_run[k], atol=1e-5, rtol=1e-4, err_msg=k)


def test_gpt2_logits_loss_gradient_and_greedy_generate(results):
    torch_run, ember_run = results
    np.testing.assert_allclose(ember_run["gpt2_logits"], torch_run["gpt2_logits"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(ember_run["gpt2_loss"], torch_run["gpt2_loss"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(ember_run["gpt2_grad_wte"], torch_run["gpt2_grad_wte"], atol=1e-5, rtol=1e-4)
    np.testing.assert_array_equal(ember_run["gpt2_generate"], torch_run["gpt2_generate"])
    assert ember_run["gpt2_generate"].shape == (2, 12)
