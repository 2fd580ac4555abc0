"""PyTorch's operator database, ``linalg.*`` and ``special.*``: every OpInfo's first float64 samples run through
Ember, outputs and gradients (of the sum of the outputs) compared with PyTorch's. Known deviations are listed with
their reasons; the test fails on any other mismatch and on a listed deviation that no longer happens."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # op_db imports it

from ._opdb_cases import Case, cases, to_ember  # noqa: E402

ALL = cases(("linalg.", "special."), "linalg-special")

#: OpInfo name -> why Ember does not run it (yet)
MISSING: dict[str, str] = {}
#: decompositions whose vectors are defined up to sign/rotation/phase: compared through invariants, no gradient
#: of the sum (it depends on the gauge; tests/ops/test_linalg_decomp.py checks their gradients through invariants)
GAUGE = {"linalg.svd", "linalg.eigh", "linalg.eig"}
#: (name, sample index) -> reason a gradient is not compared
#: OpInfo name -> (rtol, atol) where PyTorch's own result is less exact than Ember's
TOLERANCE = {
    # PyTorch's float64 Bessel functions are Cephes approximations good to ~3e-7 for |x| > 5; SciPy's (Ember's
    # kernel on NumPy) agree with mpmath to 1e-16 there (checked at x = -5.42: -0.0337813127882605 exactly)
    "special.bessel_j0": (1e-7, 1e-6),
    "special.bessel_j1": (1e-7, 1e-6),
    "special.bessel_y0": (1e-7, 1e-6),
    "special.bessel_y1": (1e-7, 1e-6),
}
NO_GRAD = {
    "special.zeta": "PyTorch gives no derivative in x (Ember raises the same error); q's is tested elsewhere",
}


def _flat(out):
    if isinstance(out, ember.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [o for v in out for o in _flat(v)]
    return [out]


def _fn(name):
    mod, attr = name.split(".", 1)
    return getattr(getattr(ember, mod), attr)


def _check_gauge(c: Case, outs, inputs):
    a = inputs[0].detach().numpy()
    if c.name == "linalg.svd":
        U, S, Vh = (o.detach().numpy() for o in outs)
        k = S.shape[-1]
        np.testing.assert_allclose(S, c.outputs[1], rtol=1e-7, atol=1e-10)
        recon = (U[..., :k] * S[..., None, :]) @ Vh[..., :k, :]
        np.testing.assert_allclose(recon, a, rtol=1e-7, atol=1e-9)
    elif c.name == "linalg.eig":  # eigenvalues in LAPACK's order, and A V = V diag(w) with unit columns
        w, V = (o.detach().numpy() for o in outs)
        np.testing.assert_allclose(w, c.outputs[0], rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(a @ V, V * w[..., None, :], rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(np.linalg.norm(V, axis=-2), 1.0, rtol=1e-9)
    else:  # eigh: eigenvalues and A V = V diag(w) on the read triangle's symmetric matrix
        w, V = (o.detach().numpy() for o in outs)
        np.testing.assert_allclose(w, c.outputs[0], rtol=1e-7, atol=1e-9)
        tri = np.triu(a) if str(c.kwargs.get("UPLO", "L")).upper() == "U" else np.tril(a)
        sym = tri + np.swapaxes(tri, -1, -2) - np.einsum("...ii->...i", tri)[..., None] * np.eye(a.shape[-1])
        np.testing.assert_allclose((V * w[..., None, :]) @ np.swapaxes(V, -1, -2), sym, rtol=1e-7, atol=1e-9)


def _run(c: Case):
    inputs = to_ember(c.inputs)
    kwargs = to_ember(c.kwargs)
    if c.outputs is None:  # PyTorch refused this sample: Ember must refuse it too
        with pytest.raises(Exception):  # noqa: B017 - any clear error; PyTorch's types vary
            _fn(c.name)(*inputs, **kwargs)
        return
    outs = _flat(_fn(c.name)(*inputs, **kwargs))
    assert len(outs) == len(c.outputs), f"{len(outs)} outputs, PyTorch gives {len(c.outputs)}"
    if c.name in GAUGE:
        _check_gauge(c, outs, inputs)
        return
    for k, (o, want) in enumerate(zip(outs, c.outputs, strict=True)):
        got = o.detach().numpy() if isinstance(o, ember.Tensor) else np.asarray(o)
        want = np.asarray(want)
        assert got.shape == want.shape, f"output {k}: shape {got.shape} != PyTorch's {want.shape}"
        rtol, atol = TOLERANCE.get(c.name, (1e-7, 1e-9))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"output {k}")
    if c.grads is None or c.name in NO_GRAD:
        return
    floats = [o for o in outs if isinstance(o, ember.Tensor) and o.requires_grad]
    leaves = [(i, x) for i, x in enumerate(inputs) if isinstance(x, ember.Tensor) and x.requires_grad]
    if not floats or not leaves:
        return
    total = sum((ember.view_as_real(o) if o.dtype.is_complex else o).sum() for o in floats)
    gs = ember.autograd.grad(total, [x for _, x in leaves], allow_unused=True)
    for (i, x), g in zip(leaves, gs, strict=True):
        want = c.grads[i]
        if want is None:
            continue
        got = np.zeros(x.shape) if g is None else g.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, equal_nan=True, err_msg=f"grad of input {i}")


@pytest.mark.parametrize("name", sorted(ALL))
def test_opinfo(name):
    if name in MISSING:
        assert not hasattr(ember.linalg if name.startswith("linalg") else ember.special, name.split(".", 1)[1]), (
            f"{name} now exists: take it off MISSING"
        )
        pytest.skip(MISSING[name])
    for c in ALL[name]:
        try:
            _run(c)
        except AssertionError as e:
            raise AssertionError(f"{name} sample {c.index}: {e}") from None
