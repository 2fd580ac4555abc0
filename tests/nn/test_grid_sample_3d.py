"""``grid_sample`` of a volume (N, C, D, H, W) at (N, Do, Ho, Wo, 3) points beside PyTorch: trilinear and nearest,
each padding mode, with and without ``align_corners``; values and both gradients, a float64 gradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)
X, G = rng.standard_normal((2, 3, 4, 5, 6)), rng.uniform(-1.2, 1.2, (2, 3, 4, 5, 3))
GO = rng.standard_normal((2, 3, 3, 4, 5))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_volume_sampling_equals_pytorch(mode: str, padding_mode: str, align_corners: bool) -> None:
    results = []
    for lib in (ember, torch):
        x, g = lib.tensor(X, requires_grad=True), lib.tensor(G, requires_grad=True)
        y = lib.nn.functional.grid_sample(x, g, mode, padding_mode, align_corners)
        gx, gg = lib.autograd.grad(y, (x, g), lib.tensor(GO))
        results.append([np.asarray(t.detach().tolist()) for t in (y, gx, gg)])
    for ours, theirs in zip(*results, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_volume_sampling_gradcheck() -> None:
    x = ember.tensor(rng.standard_normal((1, 2, 3, 3, 4)), requires_grad=True)
    g = ember.tensor(rng.uniform(-0.9, 0.9, (1, 2, 2, 2, 3)), requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda a, b: ember.nn.functional.grid_sample(a, b, "bilinear", "border", True), (x, g)
    )


def test_a_grid_of_the_wrong_rank_is_named() -> None:
    with pytest.raises(ValueError, match=r"grid \(N, Do, Ho, Wo, 3\)"):
        ember.nn.functional.grid_sample(ember.ones(1, 1, 2, 2, 2), ember.zeros(1, 2, 2, 2))
