"""PEFT (LoRA) on Ember through the switch PyTorch users make (``sys.modules["torch"] = ember`` before ``import
peft``): the same program (``peft_lora_prog.py``) runs under PyTorch and under Ember, with the same weights, and
gives the same results, including PyTorch's saved adapter loaded by Ember's ``PeftModel.from_pretrained``.

Running it found: ``torch.nn.init._calculate_correct_fan`` missing, ``ModuleDict.update`` refusing a ModuleDict,
``torch.device("mps")`` refused (PEFT compares a device with it)."""

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
pytest.importorskip("peft")

SRC = str(Path(ember.__file__).resolve().parents[1])
PROG = str(Path(__file__).with_name("peft_lora_prog.py"))
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
    out = str(tmp_path_factory.mktemp("peft"))
    _run([PROG, out, "save"])  # real PyTorch: builds the models, saves the weights and the trained adapter
    _run(["-c", ALIAS, PROG, out, "load"])  # torch aliased to Ember: the same program, the saved weights
    return np.load(f"{out}/save.npz"), np.load(f"{out}/load.npz")


@pytest.mark.parametrize("model", ["gpt2", "bert"])
def test_lora_training_matches_pytorch(results, model):
    torch_run, ember_run = results
    assert set(torch_run) == set(ember_run)
    keys = [k for k in torch_run if k.startswith(f"{model}_grad.")]
    assert any("lora_A" in k for k in keys) and any("lora_B" in k for k in keys)
    if model == "bert":  # the new classification head is trained in full (modules_to_save)
        assert any("modules_to_save" in k for k in keys)
    for k in keys:  # after the first step, the LoRA gradients
        np.testing.assert_allclose(ember_run[k], torch_run[k], atol=1e-6, rtol=1e-4, err_msg=k)
    np.testing.assert_allclose(ember_run[f"{model}_losses"], torch_run[f"{model}_losses"], atol=1e-6, rtol=0)
    for k in (k for k in torch_run if k.startswith(f"{model}_param.")):  # after 3 AdamW steps
        np.testing.assert_allclose(ember_run[k], torch_run[k], atol=1e-5, rtol=1e-4, err_msg=k)
    for k in (f"{model}_peft_logits", f"{model}_merged_logits"):
        np.testing.assert_allclose(ember_run[k], torch_run[k], atol=1e-5, rtol=0, err_msg=k)


def test_gpt2_counts_merge_and_pytorch_adapter(results):
    torch_run, ember_run = results
    np.testing.assert_array_equal(ember_run["gpt2_counts"], torch_run["gpt2_counts"])
    assert str(ember_run["gpt2_merged_type"]) == "Conv1D"  # merge_and_unload gives back the base layer
    np.testing.assert_allclose(ember_run["gpt2_merged_c_attn"], torch_run["gpt2_merged_c_attn"], atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(ember_run["gpt2_loaded_logits"], torch_run["gpt2_loaded_logits"], atol=1e-5, rtol=0)
