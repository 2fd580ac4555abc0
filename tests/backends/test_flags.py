"""PyTorch's precision flags: ``backends.cuda.matmul``, ``backends.cudnn``, ``set_float32_matmul_precision``."""

from __future__ import annotations

import pytest

import ember


@pytest.fixture
def restore(torch):
    before = (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32, ember.backends.cudnn.allow_tf32)
    yield
    torch.set_float32_matmul_precision(before[0])
    ember.set_float32_matmul_precision(before[0])
    torch.backends.cudnn.allow_tf32 = before[1]
    ember.backends.cudnn.allow_tf32 = before[2]


@pytest.mark.parametrize("precision", ["high", "medium", "highest"])
def test_matmul_precision_reads_back_as_in_torch(torch, restore, precision):
    for lib in (torch, ember):
        lib.set_float32_matmul_precision(precision)
    assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == precision
    assert ember.backends.cuda.matmul.allow_tf32 == (precision != "highest")
    with pytest.warns(UserWarning, match="no effect"):
        ember.set_float32_matmul_precision("fastest")
    assert ember.get_float32_matmul_precision() == precision


def test_flags_are_forwarded_to_loaded_torch(torch, restore):
    ember.backends.cudnn.allow_tf32 = False
    assert torch.backends.cudnn.allow_tf32 is False and ember.backends.cudnn.allow_tf32 is False
    ember.backends.cuda.matmul.allow_tf32 = True
    assert ember.get_float32_matmul_precision() == "high"
    with pytest.raises(AttributeError, match="Unknown attribute"):
        ember.backends.cuda.matmul.allow_tf64 = True
    assert ember.backends.cuda.is_built() == torch.backends.cuda.is_built()


def test_matmul_results_do_not_depend_on_the_flag_on_cpu(restore):
    a, b = ember.randn(8, 8, device="cpu"), ember.randn(8, 8, device="cpu")
    ember.set_float32_matmul_precision("highest")
    ref = (a @ b).tolist()
    ember.set_float32_matmul_precision("medium")
    assert (a @ b).tolist() == ref
