"""PEFT (LoRA) on Ember through the switch PyTorch users make (``sys.modules["torch"] = ember`` before ``import
peft``): the same program (``peft_lora_prog.py``) runs under PyTorch and under Ember, with the same weights, and
gives the same results, including PyTorch's saved adapter loaded by Ember's ``PeftModel.from_pretrained``.

Running it found: ``torch.nn.init._calculate_correct_fan`` missing, ``ModuleDict.update`` refusing a ModuleDict,
``torch.device("mps")`` refused (PEFT compares a device with it)."""

from __future__ import annotations

import numpy as np
import pytest

from ._alias_programs import results_fixture

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("safetensors")
pytest.importorskip("peft")

results = results_fixture("peft_lora_prog.py")  # real PyTorch, then through the alias


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
