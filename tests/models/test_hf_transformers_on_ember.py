"""Hugging Face transformers on Ember through the switch PyTorch users make (``sys.modules["torch"] = ember`` before
``import transformers``): the same program (``hf_transformers_prog.py``) runs under PyTorch and under Ember, with
the same weights, and gives the same results."""

from __future__ import annotations

import numpy as np
import pytest

from ._alias_programs import results_fixture

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("safetensors")

results = results_fixture("hf_transformers_prog.py")  # real PyTorch, then through the alias


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
