"""``with autocast("cpu"):`` (bfloat16 by default) around a small CNN's forward and loss, backward outside it: the
same weights and data under Ember and PyTorch 2.13 give the same dtypes and close numbers."""

from __future__ import annotations

from typing import Any

import numpy as np

import ember

from ._parity import get_torch, values

rng = np.random.default_rng(5)
X = rng.standard_normal((8, 1, 8, 8)).astype(np.float32)
Y = rng.integers(0, 4, 8)


def _net(L: Any) -> Any:
    nn = L.nn
    m = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(64, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4),
    )  # fmt: skip
    r = np.random.default_rng(0)
    with L.no_grad():
        for p in m.parameters():
            p.copy_(L.tensor(r.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3))
    return m


def test_autocast_cpu_forward_backward_matches_torch() -> None:
    torch = get_torch()
    got = {}
    for L in (ember, torch):
        m = _net(L)
        dtypes = []
        with L.autocast("cpu"):
            out = L.tensor(X)
            for layer in m:  # every layer's output dtype: bfloat16 from the first convolution on, as PyTorch's
                out = layer(out)
                dtypes.append(str(out.dtype).replace("torch.", "").replace("ember.", ""))
            loss = L.nn.functional.cross_entropy(out, L.tensor(Y))
        loss.backward()
        got[L.__name__] = (out, loss, [p.grad for p in m.parameters()], dtypes)
    (o1, l1, g1, d1), (o2, l2, g2, d2) = got["ember"], got["torch"]
    assert d1 == d2 == ["bfloat16"] * len(d2)  # (batch and layer norm: float32 parameters, bfloat16 output)
    assert str(o1.dtype) == "ember.bfloat16" and o2.dtype == torch.bfloat16  # the last linear ran in bfloat16
    assert str(l1.dtype) == "ember.float32" and l2.dtype == torch.float32  # the loss in float32
    np.testing.assert_allclose(values(o1), values(o2), rtol=0, atol=2**-6 * np.abs(values(o2)).max())
    np.testing.assert_allclose(values(l1), values(l2), rtol=2**-7)
    # (relative to the largest gradient: the convolution's bias feeds batch norm, its exact gradient is 0 and both
    # libraries' are rounding noise)
    scale = max(np.abs(values(b)).max() for b in g2)
    for i, (a, b) in enumerate(zip(g1, g2, strict=True)):
        assert a.dtype is ember.float32 and b.dtype == torch.float32, i  # parameters' gradients in their dtype
        np.testing.assert_allclose(values(a), values(b), rtol=0, atol=2**-6 * scale, err_msg=str(i))
