"""``nll_loss``'s check of its targets where a read-back is cheap: the range first (two reductions), then the full
check where the range leaves [0, classes); ``ignore_index`` may lie outside the classes."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    ("tgt", "ignore_index", "bad"),
    [
        ([0, 3, 9], -100, None),
        ([0, 10, 2], -100, 10),  # one past the classes
        ([-1, 2, 2], -100, -1),
        ([-100, 4, 0], -100, None),  # ignored: PyTorch's default ignore_index
        ([10, 4, 0], 10, None),  # ignored although out of range
        ([10, 4, -3], 10, -3),
        ([5, 5, 5], 5, None),
    ],
)
def test_nll_loss_target_range(tgt, ignore_index, bad):
    logp = F.log_softmax(ember.randn(3, 10), dim=1)
    t = ember.tensor(tgt)
    if bad is None:
        got = F.nll_loss(logp, t, ignore_index=ignore_index)
        want = torch.nn.functional.nll_loss(torch.tensor(logp.numpy()), torch.tensor(tgt), ignore_index=ignore_index)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, equal_nan=True)
    else:
        with pytest.raises(IndexError, match=f"target {bad} at position {tgt.index(bad)} is out of range for 10"):
            F.nll_loss(logp, t, ignore_index=ignore_index)
