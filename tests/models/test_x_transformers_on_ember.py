"""x-transformers on Ember through the switch PyTorch users make (``sys.modules["torch"] = ember`` before importing
it): the same program (``x_transformers_prog.py``) runs under PyTorch and under Ember, with the same weights, and
gives the same results. Running it found ``ModuleList`` refusing None entries (``norms = ModuleList([...None...])``).
"""

from __future__ import annotations

import numpy as np
import pytest

from ._alias_programs import results_fixture

pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("x_transformers")

results = results_fixture("x_transformers_prog.py")  # real PyTorch, then through the alias


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
