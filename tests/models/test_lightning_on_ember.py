"""PyTorch Lightning on Ember through the switch PyTorch users make (``sys.modules["torch"] = ember`` before
``import pytorch_lightning``): the same program (``lightning_prog.py``) runs under PyTorch and under Ember, from the
same weights and data, and gives the same results; Ember also loads the checkpoint PyTorch's Trainer wrote.

Running it found: ``torch.overrides.TorchFunctionMode`` and ``torch.utils.flop_counter.FlopCounterMode`` missing
(the Trainer enters the first around ``configure_model``; the model summary counts FLOPs with the second),
``torch._C._TensorMeta``, ``torch.PyTorchFileReader``, ``torch._C._nn._parse_to`` (Lightning's ``to``),
``torch.ScriptModule``, ``torch._dynamo.OptimizedModule``, ``torch.profiler.kineto_available``,
``torch.nn.modules.module._IncompatibleKeys``, the DataLoader iterator classes (``_BaseDataLoaderIter``...), and the
pytree names ``PyTree``, ``_get_node_type`` and ``SUPPORTED_NODES[...].flatten_fn``."""

from __future__ import annotations

import numpy as np
import pytest

from ._alias_programs import results_fixture

pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")

results = results_fixture("lightning_prog.py", in_its_folder=True)  # real PyTorch, then through the alias


def _close(ember_run, torch_run, keys, tol=1e-6):
    assert keys
    for k in keys:
        assert ember_run[k].dtype == torch_run[k].dtype, k
        np.testing.assert_allclose(ember_run[k], torch_run[k], rtol=1e-5, atol=tol, err_msg=k)


def test_fit_validate_predict_match_pytorch(results):
    torch_run, ember_run = results
    assert set(torch_run) == set(ember_run)
    assert int(ember_run["global_step"]) == 6 and len(ember_run["losses"]) == 6
    assert ember_run["losses"][-1] < ember_run["losses"][0]
    np.testing.assert_array_equal(ember_run["global_step"], torch_run["global_step"])
    np.testing.assert_array_equal(ember_run["lr"], torch_run["lr"])  # StepLR stepped at the epoch's end
    _close(ember_run, torch_run, ["losses", "callback_loss", "val_loss", "predict"])
    _close(ember_run, torch_run, [k for k in torch_run if k.startswith("fit.")])


def test_model_summary_matches_pytorch(results):
    torch_run, ember_run = results
    for k in ("summary_flops", "summary_layer_flops", "summary_params", "summary_sizes", "summary_names"):
        np.testing.assert_array_equal(ember_run[k], torch_run[k], err_msg=k)
    assert int(ember_run["summary_flops"]) == 2 * 5 * 4 * 8 + 2 * 5 * 8 * 1  # the example input's two products


def test_checkpoint_load_and_resume_match_pytorch(results):
    torch_run, ember_run = results
    assert int(ember_run["loaded_hidden"]) == 8  # the hyperparameters came back from the checkpoint
    for k in (k for k in ember_run if k.startswith("loaded.")):  # the checkpoint holds the fitted weights
        np.testing.assert_array_equal(ember_run[k], ember_run["fit." + k[len("loaded.") :]], err_msg=k)
    np.testing.assert_array_equal(ember_run["resumed_step"], 10)
    np.testing.assert_array_equal(ember_run["resumed_lr"], torch_run["resumed_lr"])
    _close(ember_run, torch_run, ["resumed_losses"] + [k for k in torch_run if k.startswith("resumed.")])


def test_loads_pytorchs_checkpoint(results):
    torch_run, ember_run = results
    for k in (k for k in torch_run if k.startswith("from_torch.")):
        np.testing.assert_array_equal(ember_run[k], torch_run["fit." + k[len("from_torch.") :]], err_msg=k)
