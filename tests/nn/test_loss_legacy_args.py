"""Functional losses take PyTorch's whole signature: the deprecated ``size_average``/``reduce`` pair at PyTorch's
positions (pytorch/examples and tutorials still pass ``size_average=False``), and ``weight`` on mse/l1/huber."""

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as EF

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 3))
P = 1 / (1 + np.exp(-X))
T = rng.uniform(0.1, 0.9, (4, 3))
S = np.where(rng.standard_normal((4, 3)) > 0, 1.0, -1.0)
C = np.array([0, 2, 1, 2])

# name -> (arrays, extra positional args after the arrays, up to but not including size_average)
CASES = {
    "mse_loss": ((X, T), ()),
    "l1_loss": ((X, T), ()),
    "smooth_l1_loss": ((X, T), ()),
    "kl_div": ((X, T), ()),
    "soft_margin_loss": ((X, S), ()),
    "binary_cross_entropy": ((P, T), (None,)),
    "binary_cross_entropy_with_logits": ((X, T), (None,)),
    "nll_loss": ((X, C), (None,)),
    "cross_entropy": ((X, C), (None,)),
    "hinge_embedding_loss": ((X, S), (1.0,)),
    "cosine_embedding_loss": ((X, T, S[:, 0]), (0.1,)),
    "margin_ranking_loss": ((X[:, 0], T[:, 0], S[:, 0]), (0.1,)),
    "triplet_margin_loss": ((X, T, P), (1.0, 2.0, 1e-6, False)),
    "poisson_nll_loss": ((X, T), (True, False)),
}


def _run(lib, F, name, size_average, reduce):
    arrays, extra = CASES[name]
    ts = [lib.tensor(a) if a.dtype.kind == "f" else lib.tensor(a, dtype=lib.int64) for a in arrays]
    ts[0].requires_grad_(True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        if name in ("nll_loss", "cross_entropy", "poisson_nll_loss"):  # reduce comes after another argument
            out = getattr(F, name)(*ts, *extra, size_average=size_average, reduce=reduce)
        else:  # positionally, where PyTorch puts the pair
            out = getattr(F, name)(*ts, *extra, size_average, reduce)
    out.sum().backward()
    # Ember's warning names the caller's line (PyTorch's, for functionals, its own file)
    warned = any("size_average and reduce" in str(m.message) and (lib is torch or m.filename == __file__) for m in w)
    return out.detach().numpy(), ts[0].grad.numpy(), warned


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("size_average,reduce", [(False, None), (True, None), (None, False), (False, True)])
def test_legacy_reduction_pair_matches_torch(name, size_average, reduce):
    v, g, warned = _run(ember, EF, name, size_average, reduce)
    tv, tg, twarned = _run(torch, TF, name, size_average, reduce)
    np.testing.assert_allclose(v, tv, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g, tg, rtol=1e-10, atol=1e-12)
    assert warned and twarned


def test_positional_ignore_index_after_size_average_as_torch():
    x, t = np.log(P / P.sum(1, keepdims=True)), np.array([0, 2, 1, 1])
    for name in ("nll_loss", "cross_entropy"):
        e = getattr(EF, name)(ember.tensor(x), ember.tensor(t), None, None, 1)
        r = getattr(TF, name)(torch.tensor(x), torch.tensor(t), None, None, 1)
        np.testing.assert_allclose(e.numpy(), r.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_elementwise_weight_matches_torch(name, reduction):
    w = rng.uniform(0.1, 2.0, (4, 3))
    outs = []
    for lib, F in ((ember, EF), (torch, TF)):
        x = lib.tensor(X, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        out = getattr(F, name)(x, lib.tensor(T), reduction=reduction, weight=wt)
        out.sum().backward()
        outs.append((out.detach().numpy(), x.grad.numpy(), wt.grad.numpy()))
    for a, b in zip(*outs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_elementwise_weight_of_another_shape_is_refused_as_torch():
    with pytest.raises(ValueError, match="weight"):
        EF.mse_loss(ember.tensor(X), ember.tensor(T), weight=ember.ones(3))
    with pytest.raises(ValueError):
        TF.mse_loss(torch.tensor(X), torch.tensor(T), weight=torch.ones(3))
