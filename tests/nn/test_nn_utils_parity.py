"""``ember.nn.utils`` beside ``torch.nn.utils``, run the same way: weight_norm and spectral_norm (forward, the
gradients of their parts, state dict keys, removal), BatchNorm folding, and the total-norm clipping helpers."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

R = np.random.RandomState(0)
X4 = R.randn(5, 2, 6, 6)
V4 = R.randn(5, 4)


def _u(lib):
    return importlib.import_module(lib.__name__ + ".nn.utils")


def _set(lib, m):
    for i, (_, p) in enumerate(sorted(m.named_parameters())):
        with lib.no_grad():
            p.copy_(lib.tensor(np.sin(np.arange(p.numel()) * 0.7 + i).reshape(tuple(p.shape))))


def _close(got, want):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if isinstance(w, list):
            assert g == w, k
        else:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"item {k}")


def _weight_norm(lib, dim):
    c = lib.nn.Conv2d(2, 3, 3).double()
    _set(lib, c)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        _u(lib).weight_norm(c, dim=dim)
    y = c(lib.tensor(X4))
    (y * y).sum().backward()
    res = [sorted(c.state_dict()), y.detach().numpy(), c.weight_g.grad.numpy(), c.weight_v.grad.numpy()]
    _u(lib).remove_weight_norm(c)
    return [*res, sorted(c.state_dict()), c.weight.detach().numpy()]


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_matches_torch(dim):
    _close(_weight_norm(ember, dim), _weight_norm(torch, dim))


def _spectral_norm(lib):
    lin = lib.nn.Linear(6, 4).double()
    _set(lib, lin)
    _u(lib).spectral_norm(lin, n_power_iterations=3)
    with lib.no_grad():  # the random start of the power iteration, made equal
        lin.weight_u.copy_(lib.tensor(np.array([0.5, -0.5, 0.5, 0.5])))
        lin.weight_v.copy_(lib.tensor(np.ones(6) / 6**0.5))
    xs = lib.tensor(R.randn(3, 6))
    for _ in range(3):
        y = lin(xs)
        (y * y).sum().backward()
    res = [sorted(lin.state_dict()), y.detach().numpy(), lin.weight_orig.grad.numpy(), lin.weight_u.numpy()]
    lin.eval()
    res.append(lin(xs).detach().numpy())
    _u(lib).remove_spectral_norm(lin)
    return [*res, sorted(lin.state_dict()), lin.weight.detach().numpy()]


def test_spectral_norm_matches_torch():
    R.seed(1)
    want = _spectral_norm(torch)
    R.seed(1)
    _close(_spectral_norm(ember), want)


def test_weight_norm_loads_a_torch_state_dict_and_refuses_twice():
    t = torch.nn.utils.parametrize  # noqa: F841 - (PyTorch imported in full)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tm = torch.nn.utils.weight_norm(torch.nn.Linear(3, 2).double())
    with pytest.warns(FutureWarning, match="deprecated"):  # (as torch's)
        em = ember.nn.utils.weight_norm(ember.nn.Linear(3, 2).double())
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(em(ember.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="two"), pytest.warns(FutureWarning):
        ember.nn.utils.weight_norm(em)
    with pytest.raises(ValueError, match="not found"):
        ember.nn.utils.remove_spectral_norm(em)


def _fusion(lib, transpose):
    conv = (lib.nn.ConvTranspose2d if transpose else lib.nn.Conv2d)(2, 3, 3).double()
    bn = lib.nn.BatchNorm2d(3).double()
    lin, bn1 = lib.nn.Linear(4, 3).double(), lib.nn.BatchNorm1d(3).double()
    for m in (conv, bn, lin, bn1):
        _set(lib, m)
    for b in (bn, bn1):
        with lib.no_grad():
            b.running_mean.copy_(lib.tensor([0.1, -0.3, 0.2]))
            b.running_var.copy_(lib.tensor([1.5, 0.4, 2.0]))
        b.eval()
    conv.eval()
    lin.eval()
    x, v = lib.tensor(X4), lib.tensor(V4)
    fused = _u(lib).fuse_conv_bn_eval(conv, bn, transpose=transpose)
    fused_lin = _u(lib).fuse_linear_bn_eval(lin, bn1)
    return [fused(x).detach().numpy(), bn(conv(x)).detach().numpy(), fused_lin(v).detach().numpy(),
            bn1(lin(v)).detach().numpy(), fused.weight.detach().numpy()]  # fmt: skip


@pytest.mark.parametrize("transpose", [False, True])
def test_batchnorm_folding_matches_torch(transpose):
    got = _fusion(ember, transpose)
    _close(got, _fusion(torch, transpose))
    np.testing.assert_allclose(got[0], got[1], rtol=1e-10, atol=1e-12)  # the folded layer equals the pair


def _norms(lib):
    u = _u(lib)
    ps = [lib.tensor(np.arange(6.0).reshape(2, 3) - 2, requires_grad=True), lib.tensor([3.0, -4.0], requires_grad=True)]
    for p in ps:
        p.grad = p.detach() * 2
    out = []
    for norm_type in (2.0, 1.0, float("inf"), 3.0):
        out.append(u.get_total_norm([p.grad for p in ps], norm_type).item())
    total = u.get_total_norm([p.grad for p in ps])
    u.clip_grads_with_norm_(ps, 5.0, total)
    # copies: ``.numpy()`` shares the CPU tensor's memory, which the next clip scales in place (a CUDA tensor's
    # array is a host copy: the values compared must not depend on where the tensors live)
    out += [p.grad.numpy().copy() for p in ps]
    with pytest.warns(FutureWarning):
        out.append(u.clip_grad_norm(ps, 1.0).item())
    out += [p.grad.numpy().copy() for p in ps]  # scaled in place again, to norm 1
    return out


def test_total_norm_helpers_match_torch():
    got, want = _norms(ember), _norms(torch)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)
