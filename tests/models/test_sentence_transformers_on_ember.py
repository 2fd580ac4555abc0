"""sentence-transformers on Ember through the switch PyTorch users make (``sys.modules["torch"] = ember`` before
``import sentence_transformers``): the same program (``sentence_transformers_prog.py``) runs under PyTorch and under
Ember on a tiny BERT saved by the PyTorch run, and gives the same embeddings, similarities, losses and gradients;
Ember also loads the model PyTorch trained and saved.

Running it found: ``torch.utils.checkpoint.get_device_states``/``set_device_states`` (its cached losses),
``nn.modules.module._EXTRA_STATE_KEY_SUFFIX`` and ``Module._non_persistent_buffers_set`` (transformers'
``from_pretrained``), and ``torch._tensor_str.printoptions`` (its model card)."""

from __future__ import annotations

import numpy as np
import pytest

from ._alias_programs import results_fixture

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("sentence_transformers")

results = results_fixture("sentence_transformers_prog.py", in_its_folder=True)  # real PyTorch, then through the alias


def test_encode_and_similarity_match_pytorch(results):
    torch_run, ember_run = results
    assert set(torch_run) == set(ember_run)
    assert int(ember_run["dim"]) == 16
    np.testing.assert_array_equal(ember_run["tokens"], torch_run["tokens"])
    for k in ("embeddings", "similarity", "encode_numpy"):
        assert ember_run[k].dtype == torch_run[k].dtype, k
        np.testing.assert_allclose(ember_run[k], torch_run[k], rtol=1e-5, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(np.linalg.norm(ember_run["embeddings"], axis=1), 1.0, rtol=1e-6)  # Normalize ran


def test_training_steps_with_the_librarys_losses_match_pytorch(results):
    torch_run, ember_run = results
    assert ember_run["mnrl_losses"][-1] < ember_run["mnrl_losses"][0] / 10  # it trains
    for k in ("mnrl_losses", "cos_losses"):
        np.testing.assert_allclose(ember_run[k], torch_run[k], rtol=1e-5, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(ember_run["grad_word_embeddings"], torch_run["grad_word_embeddings"], rtol=1e-4,
                               atol=1e-5)  # fmt: skip
    for k in ("trained_embeddings", "reloaded_embeddings", "from_torch_embeddings"):
        np.testing.assert_allclose(ember_run[k], torch_run[k], rtol=1e-4, atol=1e-5, err_msg=k)
    np.testing.assert_array_equal(ember_run["reloaded_embeddings"], ember_run["trained_embeddings"])
