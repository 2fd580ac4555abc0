"""PyTorch's operator database in complex128: the first samples of every OpInfo that lists complex dtypes and that
Ember implements (``fft.*``, ``linalg.*`` and ``special.*`` have files of their own), run through Ember.

Forward values, shapes and dtypes are compared with PyTorch's. Gradients (of the sum of the outputs' real and
imaginary parts: PyTorch's conjugate Wirtinger convention) are compared where the operator records complex
gradients (``ember.autograd.COMPLEX_GRAD_OPS``); an operator outside that set must refuse with a ``DTypeError``
naming itself, and its forward is then compared under ``no_grad``. Known deviations are listed with their
reasons; the test fails on any other mismatch and on a listed deviation that no longer happens.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
from ember._errors import DTypeError
from ember.backends._kernels_linalg import LinalgKernels

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # op_db imports it

from ._opdb_cases import Case, cases, ember_fn, ember_value, to_ember  # noqa: E402

SAMPLES = 10  # per OpInfo (op_db's first ones; some OpInfos start with empty tensors)
#: families with files of their own, CUDA-only and sparse entries, PyTorch's private operators
EXCLUDE = ("fft.", "linalg.", "special.", "stft", "istft", "signal.", "jiterator", "sparse.", "to_sparse", "_")
_ALL = cases(("",), "complex-v1", ("complex128",), EXCLUDE, max_samples=SAMPLES, variants=True)
_ALL.update(cases(("__r", "__getitem__"), "complex-dunder-v1", ("complex128",), max_samples=SAMPLES))
_ALL.update(cases(("linalg.",), "linalg-complex-v1", ("complex128",), max_samples=SAMPLES))  # (float64: its own file)


#: OpInfos whose values are random or uninitialised: only shapes and dtypes are compared
UNDEFINED_VALUES = {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
                    "randn", "randn_like", "rand_like", "normal", "uniform",
                    "nn.functional.feature_alpha_dropout"}  # fmt: skip
#: OpInfo keys (``name`` or ``name.variant``) not run, with the reason
SKIP: dict[str, str] = {
    k: "U and V are unique up to a phase per column (PyTorch's come from random projections); the real case is "
    "checked through S and U diag(S) V^H in test_opdb_sweep_fixes.py; complex gradients in test_linalg_complex_grad.py"
    for k in ("svd_lowrank", "pca_lowrank")
}


ALL = {k: v for k, v in _ALL.items() if ember_fn(v[0].name) is not None}
#: complex-capable OpInfos Ember has no function for (the test checks this list stays true)
MISSING = sorted(set(_ALL) - set(ALL))

#: (key, sample index) or key -> why the sample does not match PyTorch (each must still fail)
DEVIATIONS: dict[Any, str] = {
    ("as_strided.partial_views", 1): "the input is a view into a larger storage that as_strided addresses; the "
    "sample's NumPy copy of the view does not carry that storage",
    ("as_strided.partial_views", 2): "as above (the strides reach past the copied view, into the storage)",
    "as_strided_scatter": "PyTorch 2.13's input gradient is wrong (its own gradcheck fails: it keeps the gradient "
    "at the overwritten positions and drops it elsewhere); Ember's passes gradcheck (test below)",
    "logcumsumexp": "not implemented for complex tensors (refused with a DTypeError)",
    "normal.in_place": "normal_ refuses complex tensors (a DTypeError)",
}
_PIVOTS = ("complex LU pivots on the largest |z|, LAPACK (PyTorch) on the largest |re| + |im|: another valid "
           "P L U of the same matrix")  # fmt: skip
# where the default device's backend runs Ember's reference LU (NumPy's, CuPy's; torch's is LAPACK's): to_ember puts
# the samples there (torch-CPU in the fake-device run, the cuda backend under EMBER_DEVICE=cuda), not on the CPU's
if type(ember.backends.get_backend()).lu_factor is LinalgKernels.lu_factor:
    DEVIATIONS.update({("linalg.lu", i): _PIVOTS for i in (6, 7, 8, 9)})
    DEVIATIONS.update({("linalg.lu_factor", i): _PIVOTS for i in (3, 7, 8, 9)})
    DEVIATIONS.update({("lu", i): _PIVOTS for i in (3, 8)})  # (torch.lu: linalg.lu_factor_ex's result)
    DEVIATIONS.update({("linalg.lu_factor_ex", i): _PIVOTS for i in (6, 7, 8, 9)})
#: OpInfo keys whose operator refuses complex gradients (a DTypeError): forward values compared under no_grad
NO_COMPLEX_GRAD = {"nn.functional.softsign"}


def _flat(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [o for v in out for o in _flat(v)]
    return [out]


def _as_np(x: Any) -> np.ndarray:
    return x.detach().numpy() if isinstance(x, ember.Tensor) else np.asarray(x)


def _leaves(inputs: Any) -> list[ember.Tensor]:
    if isinstance(inputs, ember.Tensor):
        return [inputs] if inputs.requires_grad else []
    if isinstance(inputs, (list, tuple)):
        return [t for v in inputs for t in _leaves(v)]
    return []


def _grads_wanted(c: Case) -> list[np.ndarray | None]:
    """PyTorch's gradients, one per top-level input that required grad (the order ``_leaves`` finds them)."""
    assert c.grads is not None
    return [g for x, g in zip(c.inputs, c.grads, strict=True) if getattr(x, "grad", False)]


def _check_eigh(c: Case, outs: list[Any], a: np.ndarray) -> None:
    """Eigenvectors are unique up to a phase: eigenvalues, and V diag(w) V^H against the read triangle's matrix."""
    w, v = (o.detach().numpy() for o in outs)
    np.testing.assert_allclose(w, c.outputs[0], rtol=1e-7, atol=1e-9)
    tri = np.triu(a) if str(c.kwargs.get("UPLO", "L")).upper() == "U" else np.tril(a)
    herm = tri + np.conj(np.swapaxes(tri, -1, -2))
    herm = herm - np.einsum("...ii->...i", herm)[..., None] * np.eye(a.shape[-1]) / 2  # the diagonal once
    herm = herm - 1j * np.einsum("...ii->...i", herm).imag[..., None] * np.eye(a.shape[-1])  # a real diagonal
    recon = (v * w[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))
    np.testing.assert_allclose(recon, herm, rtol=1e-7, atol=1e-9)


def _run(key: str, c: Case) -> str:
    """Run one case; 'refused' when the operator refused a complex gradient, else 'ok'. Raises on a mismatch."""
    fn = ember_fn(c.name)
    inputs, kwargs = to_ember(c.inputs), ember_value(c.kwargs)
    if c.outputs is None:  # PyTorch refused this sample: Ember must refuse it too
        with pytest.raises(Exception), ember.no_grad():  # noqa: B017 - any clear error; PyTorch's types vary
            fn(*inputs, **kwargs)
        return "ok"
    status = "ok"
    try:
        outs = _flat(fn(*inputs, **kwargs))
    except DTypeError as e:
        if "gradients through complex tensors are not supported" not in str(e):
            raise
        op = str(e).split(":", 1)[0]
        assert op not in ember.autograd.COMPLEX_GRAD_OPS, f"{op} is listed but refused"
        status = "refused"
        with ember.no_grad():
            outs = _flat(fn(*inputs, **kwargs))
    assert len(outs) == len(c.outputs), f"{len(outs)} outputs, PyTorch gives {len(c.outputs)}"
    if c.name == "linalg.eigh":  # (its gradient of the sum depends on the phase; test_linalg_decomp checks it)
        _check_eigh(c, outs, inputs[0].detach().numpy())
        return status
    for k, (o, want) in enumerate(zip(outs, c.outputs, strict=True)):
        got, want = _as_np(o), np.asarray(want)
        assert got.shape == want.shape, f"output {k}: shape {got.shape} != PyTorch's {want.shape}"
        assert got.dtype == want.dtype, f"output {k}: dtype {got.dtype} != PyTorch's {want.dtype}"
        if c.name not in UNDEFINED_VALUES:
            np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9, equal_nan=True, err_msg=f"output {k}")
    leaves = _leaves(inputs)
    if status == "refused" or c.grads is None or not leaves:
        return status
    floats = [o for o in outs if isinstance(o, ember.Tensor) and o.requires_grad]
    wanted = _grads_wanted(c)
    if not floats:
        assert all(w is None or not w.any() for w in wanted), "no gradient where PyTorch's is nonzero"
        return status
    total = sum((ember.view_as_real(o) if o.dtype.is_complex else o).sum() for o in floats)
    gs = ember.autograd.grad(total, leaves, allow_unused=True)
    for i, (x, g, want) in enumerate(zip(leaves, gs, wanted, strict=True)):
        if want is None:
            continue
        got = np.zeros(x.shape, want.dtype) if g is None else g.numpy()
        assert got.shape == want.shape, f"grad of input {i}: shape {got.shape} != PyTorch's {want.shape}"
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, equal_nan=True, err_msg=f"grad of input {i}")
    return status


def test_the_sweep_covers_the_complex_opinfos():
    assert len(ALL) > 200 and all(c.dtype == "complex128" for cs in ALL.values() for c in cs)
    assert set(NO_COMPLEX_GRAD) <= set(ALL) and set(SKIP) <= set(ALL)


@pytest.mark.parametrize("key", sorted(ALL))
@pytest.mark.filterwarnings("ignore:Casting complex values to real:UserWarning")  # both libraries warn
@pytest.mark.filterwarnings("ignore:torch.(cholesky|lu) is deprecated:UserWarning")  # (PyTorch's deprecations)
def test_opinfo_complex128(key):
    if key in SKIP:
        pytest.skip(SKIP[key])
    statuses, failed = set(), {}
    for c in ALL[key]:
        try:
            statuses.add(_run(key, c))
        except Exception as e:  # an assertion, or an error PyTorch did not raise
            failed[c.index] = f"{type(e).__name__}: {e}"
    unlisted = {i: m for i, m in failed.items() if key not in DEVIATIONS and (key, i) not in DEVIATIONS}
    assert not unlisted, f"{key}: " + "; ".join(f"sample {i}: {m}" for i, m in unlisted.items())
    stale = [i for (k, i) in (d for d in DEVIATIONS if isinstance(d, tuple)) if k == key and i not in failed]
    assert not stale and (key not in DEVIATIONS or failed), f"{key} {stale}: now matches PyTorch, unlist it"
    refused = "refused" in statuses
    assert not statuses or refused == (key in NO_COMPLEX_GRAD), (
        f"{key}: complex gradients {'refused' if refused else 'recorded'}; NO_COMPLEX_GRAD says otherwise"
    )


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_as_strided_scatter_gradient_is_the_finite_difference_one(dtype):
    """The positions ``src`` overwrites get no gradient from ``input`` (PyTorch 2.13's backward gets this wrong)."""
    rng = np.random.default_rng(0)
    dt = getattr(ember, dtype)
    x = ember.tensor(rng.standard_normal((3, 3)), dtype=dt, requires_grad=True)
    s = ember.tensor(rng.standard_normal((2, 2)), dtype=dt, requires_grad=True)
    for size, stride, offset in [((2, 2), (1, 2), 0), ((2, 2), (1, 2), 1), ((2, 2), (2, 1), 3), ((), (), 4)]:
        src = s if size else s[0, 0]
        args = (size, stride, offset)
        assert ember.autograd.gradcheck(lambda a, b, args=args: ember.as_strided_scatter(a, b, *args), (x, src))
        y = ember.as_strided_scatter(x, src, size, stride, offset)
        (g,) = ember.autograd.grad((ember.view_as_real(y) if y.dtype.is_complex else y).sum(), [x])
        kept = np.ones(9)
        kept[[offset + sum(i * st for i, st in zip(idx, stride, strict=True)) for idx in np.ndindex(*size)]] = 0
        np.testing.assert_array_equal(g.numpy().ravel(), kept * (1 + 1j if y.dtype.is_complex else 1))


def test_complex_pinv_and_tensor_tolerances_match_pytorch():
    """pinv of complex matrices is V diag(1/s) U^H (the conjugates were missing); tolerances may be tensors."""
    rng = np.random.default_rng(1)
    for shape in [(4, 4), (3, 5), (5, 3), (2, 4, 4)]:
        a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        h = a @ np.conj(np.swapaxes(a, -1, -2))
        for m, kw in [(a, {}), (h, {"hermitian": True}), (a, {"rtol": 0.3})]:
            want = torch.linalg.pinv(torch.tensor(m), **kw).numpy()
            np.testing.assert_allclose(ember.linalg.pinv(ember.tensor(m), **kw).numpy(), want, rtol=1e-9, atol=1e-12)
    b = rng.standard_normal((2, 4, 4))
    for L in (ember, torch):
        kws = [{"rtol": L.tensor([0.2, 0.6])}, {"atol": L.tensor([0.5, 3.0])}, {"atol": L.tensor(1.0), "rtol": 0.1}]
        got = [
            (L.linalg.pinv(L.tensor(b), **kw).numpy(), L.linalg.matrix_rank(L.tensor(b), **kw).tolist()) for kw in kws
        ]
        if L is ember:
            mine = got
    for (p, r), (tp, tr) in zip(mine, got, strict=True):
        np.testing.assert_allclose(p, tp, rtol=1e-9, atol=1e-12)
        assert r == tr
