"""``nn.utils.parametrizations.orthogonal`` beside PyTorch's: after the same initial weight the parametrized weight,
its gradients and its values after several optimizer steps equal PyTorch's for every map, with and without the
trivialization, for tall, square, wide, batched and complex weights; assignment and refusals as PyTorch's."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _p(lib):
    return importlib.import_module(lib.__name__ + ".nn.utils.parametrizations")


def _holder(lib, w):
    m = lib.nn.Module()
    m.weight = lib.nn.Parameter(lib.tensor(w))
    return m


def _train(lib, w, omap, triv, base=None, steps=3):
    m = _holder(lib, w)
    _p(lib).orthogonal(m, orthogonal_map=omap, use_trivialization=triv)
    if base is not None:  # PyTorch completes a non-square base with random columns: use the same ones
        with lib.no_grad():
            m.parametrizations.weight[0].base.copy_(lib.tensor(base))
    first = m.weight.detach().clone()
    opt = lib.optim.SGD(m.parameters(), lr=0.05)
    x = lib.tensor(np.cos(np.arange(w.shape[-1] * 2.0)).reshape(2, w.shape[-1]).astype(w.dtype))
    grads = []
    for _ in range(steps):
        y = x @ m.weight.mT
        (y * y.conj()).real.pow(2).sum().backward() if w.dtype.kind == "c" else (y**3).sum().backward()
        grads.append(m.parametrizations.weight.original.grad.clone())
        opt.step()
        opt.zero_grad()
    keys = sorted(m.state_dict())
    return first, grads, m.weight.detach(), keys


def _np(t):
    return np.asarray(t.detach().cpu().numpy() if hasattr(t, "cpu") else t.numpy())


R = np.random.RandomState(5)
SHAPES = {"square": R.randn(3, 3), "tall": R.randn(4, 3), "wide": R.randn(3, 5), "batch": R.randn(2, 3, 3)}


@pytest.mark.parametrize("triv", [True, False], ids=["trivialization", "plain"])
@pytest.mark.parametrize("omap", ["matrix_exp", "cayley", "householder", None])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_values_gradients_and_steps_match_torch(shape, omap, triv):
    w = SHAPES[shape]
    t = _train(torch, w, omap, triv)
    base = None
    if triv and w.shape[-1] != w.shape[-2]:
        tm = _holder(torch, w)
        torch.manual_seed(0)
        _p(torch).orthogonal(tm, orthogonal_map=omap, use_trivialization=True)
        base = tm.parametrizations.weight[0].base.numpy()
        torch.manual_seed(0)
        t = _train(torch, w, omap, triv)
    e = _train(ember, w, omap, triv, base)
    np.testing.assert_allclose(_np(e[0]), _np(t[0]), atol=1e-10)
    for ge, gt in zip(e[1], t[1], strict=True):
        np.testing.assert_allclose(_np(ge), _np(gt), rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(_np(e[2]), _np(t[2]), rtol=1e-8, atol=1e-9)
    assert e[3] == t[3]
    q = _np(e[2])
    q = q if q.shape[-2] >= q.shape[-1] else np.swapaxes(q, -1, -2)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] +
                               (q.shape[-1],) * 2), atol=1e-10)  # fmt: skip


def test_complex_weights_are_unitary_and_match_torch():
    w = R.randn(3, 3) + 1j * R.randn(3, 3)
    t, e = _train(torch, w, "matrix_exp", True), _train(ember, w, "matrix_exp", True)
    np.testing.assert_allclose(_np(e[0]), _np(t[0]), atol=1e-10)
    for ge, gt in zip(e[1], t[1], strict=True):
        np.testing.assert_allclose(_np(ge), _np(gt), rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(_np(e[2]), _np(t[2]), rtol=1e-8, atol=1e-9)
    # the Cayley map's values (its gradient needs complex linalg.solve gradients, which Ember lacks)
    step = np.tril(R.randn(3, 3)) * 0.1 + 0j
    values = []
    for lib in (torch, ember):
        m = _holder(lib, w)
        _p(lib).orthogonal(m, orthogonal_map="cayley")
        with lib.no_grad():
            m.parametrizations.weight.original.add_(lib.tensor(step))
            values.append(_np(m.weight))
    np.testing.assert_allclose(values[1], values[0], atol=1e-10)


def _assign(lib):
    out = []
    m = _holder(lib, SHAPES["square"])
    _p(lib).orthogonal(m)
    q = np.linalg.qr(R.randn(3, 3))[0]
    m.weight = lib.tensor(q)  # an orthogonal value is kept as it is (the trivialization's base)
    out.append(_np(m.weight))
    m.weight = lib.tensor(SHAPES["square"])  # anything else is made orthogonal first
    out.append(_np(m.weight))
    for omap in ("matrix_exp", "cayley"):
        m = _holder(lib, SHAPES["tall"])
        _p(lib).orthogonal(m, orthogonal_map=omap, use_trivialization=False)
        out.append(_np(m.parametrizations.weight.original))  # not assignable: registration keeps the original
        with pytest.raises(NotImplementedError, match="use_trivialization=False"):
            m.weight = lib.tensor(np.linalg.qr(SHAPES["tall"])[0])
    m = _holder(lib, SHAPES["tall"])
    _p(lib).orthogonal(m, orthogonal_map="householder", use_trivialization=False)
    m.weight = lib.tensor(np.linalg.qr(R.randn(4, 3))[0])
    out.append(_np(m.weight))
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
        m.weight = lib.tensor(np.zeros((3, 4)))
    return out


def test_assignment_matches_torch():
    state = R.get_state()
    t = _assign(torch)
    R.set_state(state)
    e = _assign(ember)
    for a, b in zip(e, t, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-10)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_refusals_as_torch(lib):
    with pytest.raises(ValueError, match=r"Expected a matrix or batch of matrices\. Got a tensor of 1 dimensions"):
        _p(lib).orthogonal(_holder(lib, np.ones(3)))
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp"'):
        _p(lib).orthogonal(_holder(lib, np.eye(3)), orthogonal_map="qr")
    with pytest.raises(ValueError, match="householder parametrization does not support complex"):
        _p(lib).orthogonal(_holder(lib, np.eye(3) + 0j), orthogonal_map="householder")
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
        _p(lib).orthogonal(lib.nn.Linear(2, 2), name="kernel")


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_assigning_through_a_parametrization_without_right_inverse_raises(lib):
    parametrize = importlib.import_module(lib.__name__ + ".nn.utils.parametrize")

    class Double(lib.nn.Module):
        def forward(self, x):
            return 2 * x

    m = lib.nn.Linear(2, 2)
    parametrize.register_parametrization(m, "weight", Double())
    before = m.parametrizations.weight.original.detach().clone()
    with pytest.raises(RuntimeError, match="parametrization Double does not implement right_inverse"):
        m.weight = lib.ones(2, 2)
    assert (m.parametrizations.weight.original.detach() == before).all()


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_right_inverse_returning_another_dtype_is_refused(lib):
    parametrize = importlib.import_module(lib.__name__ + ".nn.utils.parametrize")

    class Bad(lib.nn.Module):
        def forward(self, x):
            return x

        def right_inverse(self, x):
            return x.to(lib.float64) if getattr(self, "armed", False) else x

    m = lib.nn.Linear(2, 2)
    p = Bad()
    parametrize.register_parametrization(m, "weight", p)
    p.armed = True
    with pytest.raises(ValueError, match="has dtype"):
        m.weight = lib.ones(2, 2)


def test_geqrf_matches_torch_and_is_not_differentiable():
    a = R.randn(2, 5, 3)
    x, tau = ember.geqrf(ember.tensor(a))
    tx, ttau = torch.geqrf(torch.tensor(a))
    np.testing.assert_allclose(x.numpy(), tx.numpy(), atol=1e-12)
    np.testing.assert_allclose(tau.numpy(), ttau.numpy(), atol=1e-12)
    c = R.randn(4, 3) + 1j * R.randn(4, 3)
    np.testing.assert_allclose(ember.geqrf(ember.tensor(c))[0].numpy(), torch.geqrf(torch.tensor(c))[0].numpy(),
                               atol=1e-12)  # fmt: skip
    leaf = ember.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for 'geqrf' is not implemented"):
        leaf.geqrf()[0].sum().backward()
