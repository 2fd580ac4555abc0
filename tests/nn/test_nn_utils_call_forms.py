"""``torch.nn.utils`` call forms PyTorch programs write, run beside torch."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("norm_type", ["inf", "2", 2, float("inf"), 1.0])
def test_clip_grad_norm_takes_a_norm_type_as_a_string_as_torch(norm_type):
    def run(lib):
        ps = [lib.nn.Parameter(lib.tensor([3.0, -4.0])), lib.nn.Parameter(lib.tensor([[1.0, 2.0]]))]
        for p in ps:
            p.grad = p.detach() * 1
        total = lib.nn.utils.clip_grad_norm_(ps, 1.0, norm_type=norm_type)
        return float(total), [p.grad.numpy().copy() for p in ps]

    (et, eg), (tt, tg) = run(ember), run(torch)
    assert et == pytest.approx(tt, rel=1e-6)
    for a, b in zip(eg, tg, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_old_weight_norm_warns_as_torch():
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.nn.utils.weight_norm(lib.nn.Linear(3, 2))
        assert [x.category for x in w] == [FutureWarning]
        assert "parametrizations.weight_norm" in str(w[0].message)
