"""Linear-algebra failures raise ``ember.linalg.LinAlgError`` where PyTorch raises ``torch.linalg.LinAlgError``
(a ``RuntimeError`` in both), naming the operation."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")

CASES = [
    ("inv", lambda lib: (lib.zeros(2, 2, dtype=lib.float64),), "inv"),
    ("cholesky", lambda lib: (-lib.eye(2, dtype=lib.float64),), "cholesky"),
    ("solve", lambda lib: (lib.zeros(2, 2, dtype=lib.float64), lib.ones(2, dtype=lib.float64)), "solve"),
    ("solve", lambda lib: (lib.zeros(3, 2, 2, dtype=lib.float64), lib.ones(3, 2, 4, dtype=lib.float64)), "solve"),
]


@pytest.mark.parametrize(("name", "args", "words"), CASES)
def test_singular_inputs_raise_linalg_error_as_torch_does(name, args, words):
    with pytest.raises(torch.linalg.LinAlgError):
        getattr(torch.linalg, name)(*args(torch))
    with pytest.raises(ember.linalg.LinAlgError, match=words) as info:
        getattr(ember.linalg, name)(*args(ember))
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, ValueError)
