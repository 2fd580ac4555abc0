"""Array kernels (special functions, pad, gather/scatter, sort/unique): torch's overrides against the
NumPy reference on plain arrays, forward and backward kernels; the reference's host fallbacks against SciPy."""

import numpy as np
import pytest

from ember.backends.numpy_backend import NumpyBackend

torch = pytest.importorskip("torch")
from ember.backends.torch.backend import TorchBackend  # noqa: E402

REF = NumpyBackend()
TB = TorchBackend()
rng = np.random.default_rng(5)


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def same(t, a, tol=1e-12):
    assert isinstance(t, torch.Tensor) and t.is_contiguous()
    assert tuple(t.shape) == tuple(a.shape) and str(t.dtype).split(".")[1] == str(a.dtype)
    np.testing.assert_allclose(t.numpy(), a, rtol=tol, atol=tol)


# -- erf / erfinv ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-14), (np.float32, 2e-6)])
def test_torch_erf_erfinv_match_the_reference(dtype, tol):
    x = np.concatenate([rng.standard_normal(50) * 2, [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(dtype)
    same(TB.erf(_t(x)), REF.erf(x), tol)
    y = np.concatenate([rng.uniform(-1, 1, 50), [0.0, 1.0, -1.0, 0.999999, 1.5, np.nan]]).astype(dtype)
    same(TB.erfinv(_t(y)), REF.erfinv(y), tol * 10)


def test_host_fallback_without_scipy_matches_scipy():
    pytest.importorskip("scipy")
    bare = NumpyBackend()
    bare.special = None
    x = np.concatenate([rng.standard_normal(200) * 3, [0.0, np.inf, -np.inf, np.nan]])
    np.testing.assert_allclose(bare.erf(x), REF.erf(x), rtol=1e-15, atol=1e-16)
    y = np.concatenate([rng.uniform(-1, 1, 200), [0.0, -1.0, 1.0, 2.0]])
    np.testing.assert_allclose(bare.erfinv(y), REF.erfinv(y), rtol=1e-13)
    tail = np.array([1 - 1e-12])  # ill-conditioned: one ulp of y moves x by ~1e-7 relative
    np.testing.assert_allclose(bare.erfinv(tail), REF.erfinv(tail), rtol=1e-6)
    assert bare.erf(x.astype(np.float32)).dtype == np.float32


def test_trunc_normal_kernel_in_bounds_and_seeded_on_both():
    for be in (REF, TB):
        a = be.trunc_normal(np.random.default_rng(3), (2000,), _f32(), 1.0, 2.0, -1.0, 2.0)
        b = be.trunc_normal(np.random.default_rng(3), (2000,), _f32(), 1.0, 2.0, -1.0, 2.0)
        ha, hb = be.to_numpy(a), be.to_numpy(b)
        assert ha.dtype == np.float32 and np.array_equal(ha, hb)
        assert ha.min() >= -1.0 and ha.max() <= 2.0 and abs(ha.mean() - 0.6) < 0.1


def _f32():
    import ember

    return ember.float32


# -- pad ---------------------------------------------------------------------------------------------
PADS = [  # shape, widths per dim
    ((2, 3, 7), ((0, 0), (0, 0), (2, 3))),
    ((2, 3, 5, 6), ((0, 0), (0, 0), (1, 0), (3, 2))),
    ((1, 2, 4, 5, 3), ((0, 0), (0, 0), (1, 2), (0, 3), (2, 1))),
    ((4, 6), ((1, 2), (0, 1))),  # every dim padded (no channel dim)
    ((3, 4, 5, 6), ((0, 0), (1, 1), (2, 0), (1, 3))),  # four trailing dims: torch falls back to the reference
    ((5,), ((3, 4),)),
]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("case", range(len(PADS)))
def test_torch_pad_kernels_match_the_reference(mode, case):
    shape, widths = PADS[case]
    x = rng.standard_normal(shape)
    value = 1.5 if mode == "constant" else 0
    y = REF.pad(x, widths, mode, value)
    same(TB.pad(_t(x), widths, mode, value), y)
    g = rng.standard_normal(y.shape)
    gx = REF.pad_backward(g, widths, mode)
    same(TB.pad_backward(_t(g), widths, mode), gx)
    # the adjoint: <pad(x), g> == <x, pad_backward(g)> for the linear part
    lin = REF.pad(x, widths, mode, 0)
    np.testing.assert_allclose(np.sum(lin * g), np.sum(x * gx), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.int64, np.bool_, np.float32])
def test_pad_kernels_keep_integer_and_bool_dtypes(dtype):
    x = (rng.standard_normal((2, 3, 4)) > 0).astype(dtype)
    for mode in ("constant", "reflect", "replicate", "circular"):
        same(TB.pad(_t(x), ((0, 0), (1, 1), (2, 1)), mode), REF.pad(x, ((0, 0), (1, 1), (2, 1)), mode))
