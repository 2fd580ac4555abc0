"""accelerate on Ember through the switch PyTorch users make (``sys.modules["torch"] = ember`` before ``import
accelerate``): the same program (``accelerate_prog.py``) runs under PyTorch and under Ember, with the same weights
and data, and gives the same results; Ember's ``load_state`` also resumes from the checkpoint PyTorch saved.

Running it found: ``torch.distributed.tensor.DTensor``, ``torch.nn.DataParallel`` and
``torch._dynamo.eval_frame.OptimizedModule`` missing (accelerate checks a model's type against them),
``DataLoader``'s ``in_order`` and PyTorch's positional order, ``device == "npu"`` raising, and an optimizer wrapper
that never runs ``Optimizer.__init__`` (``AcceleratedOptimizer``) failing in ``step``."""

from __future__ import annotations

import numpy as np
import pytest

from ._alias_programs import results_fixture

pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("accelerate")

results = results_fixture("accelerate_prog.py", in_its_folder=True)  # real PyTorch, then through the alias


def test_prepared_loop_with_accumulation_matches_pytorch(results):
    torch_run, ember_run = results
    assert set(torch_run) == set(ember_run)
    assert str(ember_run["device"]) == "cpu" and int(ember_run["n_batches"]) == 4
    for tag in ("e1", "e2"):
        np.testing.assert_array_equal(ember_run[f"{tag}_syncs"], [False, True, False, True])
        np.testing.assert_array_equal(ember_run[f"{tag}_syncs"], torch_run[f"{tag}_syncs"])
        np.testing.assert_allclose(ember_run[f"{tag}_losses"], torch_run[f"{tag}_losses"], atol=1e-6, rtol=0)
        np.testing.assert_allclose(ember_run[f"{tag}_grads"], torch_run[f"{tag}_grads"], atol=1e-6, rtol=1e-5)
        for k in (k for k in torch_run if k.startswith(f"{tag}_param.")):
            np.testing.assert_allclose(ember_run[k], torch_run[k], atol=1e-6, rtol=1e-5, err_msg=k)


def test_save_state_load_state_replays_the_epoch(results):
    ember_run = results[1]
    for k in (k for k in ember_run if k.startswith("restored.")):  # load_state gave back the epoch-1 weights
        np.testing.assert_array_equal(ember_run[k], ember_run["e1_param." + k[len("restored.") :]])
    for k in (k for k in ember_run if k.startswith("e2_")):  # and AdamW's moments: the same epoch again, exactly
        np.testing.assert_array_equal(ember_run[k.replace("e2_", "e2again_")], ember_run[k], err_msg=k)


def test_resume_from_pytorchs_checkpoint(results):
    torch_run, ember_run = results
    np.testing.assert_allclose(ember_run["e2torch_losses"], torch_run["e2_losses"], atol=1e-5, rtol=0)
    for k in (k for k in torch_run if k.startswith("e2_param.")):
        np.testing.assert_allclose(ember_run[k.replace("e2_", "e2torch_")], torch_run[k], atol=1e-5, rtol=1e-4)
