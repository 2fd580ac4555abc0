"""``ember.nn.utils.parametrize`` and ``parametrizations`` beside PyTorch's: the same calls give the same names,
state dict keys, values and gradients; parametrizations are removed leaving the value or the original."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

X = np.cos(np.arange(15.0)).reshape(5, 3)


def _mods(lib):
    return importlib.import_module(lib.__name__ + ".nn.utils.parametrize"), importlib.import_module(
        lib.__name__ + ".nn.utils.parametrizations"
    )


def _linear(lib, n_in=3, n_out=3):
    m = lib.nn.Linear(n_in, n_out).double()
    with lib.no_grad():
        m.weight.copy_(lib.tensor(np.sin(np.arange(n_in * n_out) * 0.7).reshape(n_out, n_in)))
        m.bias.copy_(lib.tensor(np.linspace(-0.5, 0.5, n_out)))
    return m


def _symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()

    return Symmetric()


def _custom(lib):
    parametrize, _ = _mods(lib)
    m = _linear(lib)
    parametrize.register_parametrization(m, "weight", _symmetric(lib))
    y = m(lib.tensor(X))
    (y * y).sum().backward()
    flags = [parametrize.is_parametrized(m), parametrize.is_parametrized(m, "bias")]
    res = [type(m).__name__, sorted(m.state_dict()), flags, y.detach().numpy(),
           m.parametrizations.weight.original.grad.numpy(), m.weight.detach().numpy()]  # fmt: skip
    m.weight = lib.tensor(np.arange(9.0).reshape(3, 3))
    res.append(m.parametrizations.weight.original.detach().numpy())
    with parametrize.cached():
        assert m.weight is m.weight
    parametrize.remove_parametrizations(m, "weight")
    res += [type(m).__name__, sorted(m.state_dict()), m.weight.detach().numpy()]
    return res


def _weight_norm(lib):
    _, P = _mods(lib)
    m = P.weight_norm(_linear(lib, 3, 4))
    y = m(lib.tensor(X))
    (y * y).sum().backward()
    pw = m.parametrizations.weight
    return [sorted(m.state_dict()), y.detach().numpy(), pw.original0.grad.numpy(), pw.original1.grad.numpy()]


def _spectral_norm(lib):
    parametrize, P = _mods(lib)
    m = P.spectral_norm(_linear(lib, 3, 4), n_power_iterations=2)
    with lib.no_grad():  # the random start of the power iteration, made equal
        m.parametrizations.weight[0]._u.copy_(lib.tensor([0.5, -0.5, 0.5, 0.5]))
        m.parametrizations.weight[0]._v.copy_(lib.tensor(np.ones(3) / 3**0.5))
    for _ in range(3):
        y = m(lib.tensor(X))
        (y * y).sum().backward()
    res = [sorted(m.state_dict()), y.detach().numpy(), m.parametrizations.weight.original.grad.numpy()]
    m.eval()
    res.append(m(lib.tensor(X)).detach().numpy())
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    return [*res, sorted(m.state_dict())]


@pytest.mark.parametrize("case", [_custom, _weight_norm, _spectral_norm])
def test_parametrizations_match_torch(case):
    got, want = case(ember), case(torch)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"item {k}")
        else:
            assert g == w, k


def test_a_torch_state_dict_loads_and_refusals():
    _, tp = _mods(torch)
    parametrize, P = _mods(ember)
    tm = tp.weight_norm(torch.nn.Linear(3, 2).double())
    em = P.weight_norm(ember.nn.Linear(3, 2).double())
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    np.testing.assert_allclose(em(ember.tensor(X)).detach().numpy(), tm(torch.tensor(X)).detach().numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="shape"):
        parametrize.register_parametrization(ember.nn.Linear(3, 2), "weight", ember.nn.Flatten(0))
    with pytest.raises(ValueError, match="no parametrization"):
        parametrize.remove_parametrizations(ember.nn.Linear(3, 2), "weight")
