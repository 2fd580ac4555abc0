"""torchmetrics on Ember through the switch PyTorch users make (``sys.modules["torch"] = ember`` before ``import
torchmetrics``): the same program (``torchmetrics_prog.py``) runs under PyTorch and under Ember on the same data and
gives the same values, dtypes and shapes.

Running it found: ``torch._C._log_api_usage_once`` missing (every metric calls it), and a 0-d bool tensor used as an
index read as ``x[1]`` (R2Score's ``rss[cond]``; on a 1-d tensor that was a silently wrong value)."""

from __future__ import annotations

import numpy as np
import pytest

from ._alias_programs import results_fixture

pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

results = results_fixture("torchmetrics_prog.py")  # real PyTorch, then through the alias


@pytest.mark.parametrize("group", ["batch0.", "batch1.", "batch2.", "epoch.", "after_reset.", "binary_", "functional_",
                                   "roc", "reg.", "rmse", "mean"])  # fmt: skip
def test_metrics_equal_pytorchs(results, group):
    torch_run, ember_run = results
    assert set(torch_run) == set(ember_run)
    keys = [k for k in torch_run if k.startswith(group)]
    assert keys
    for k in keys:
        assert ember_run[k].dtype == torch_run[k].dtype and ember_run[k].shape == torch_run[k].shape, k
        np.testing.assert_allclose(ember_run[k], torch_run[k], rtol=1e-6, atol=1e-7, err_msg=k)


def test_the_collection_holds_every_metric(results):
    torch_run, ember_run = results
    names = {k.split(".", 1)[1] for k in ember_run if k.startswith("epoch.")}
    assert names == {"acc", "acc_macro", "acc_top2", "f1", "f1_weighted", "precision", "recall", "auroc", "ap",
                     "confmat"}  # fmt: skip
    assert ember_run["epoch.confmat"].shape == (4, 4) and ember_run["epoch.confmat"].sum() == 24
    assert {k for k in ember_run if k.startswith("reg.")} == {k for k in torch_run if k.startswith("reg.")}
