"""``ember.fft``: every function in the check_op registry (float64/complex128 gradcheck, forward and backward parity
with PyTorch in float32 and float64), over real and complex inputs, ``n``/``s``/``dim`` (cropping and zero-padding)
and the three ``norm`` modes; second-order gradients; errors; dtypes; the backend kernels against PyTorch's."""

import numpy as np
import pytest

import ember
from ember.testing import check_op, torch_or_none

rng = np.random.default_rng(2025)


def c(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def r(*shape):
    return rng.standard_normal(shape)


def T():
    return __import__("torch")


def both(label, fn, args, **kw):
    """``fn(fft_module, *tensors)`` with ember.fft and torch.fft."""
    return (label, lambda *a: fn(ember.fft, *a), lambda *a: fn(T().fft, *a), args, kw)


CASES = [
    # one-dimensional, complex-to-complex (complex and real inputs)
    both("fft", lambda F, a: F.fft(a), [c(3, 8)]),
    both("fft_real", lambda F, a: F.fft(a, dim=0), [r(5, 3)]),
    both("fft_pad_ortho", lambda F, a: F.fft(a, n=11, norm="ortho"), [c(2, 7)]),
    both("fft_crop_forward", lambda F, a: F.fft(a, n=4, norm="forward"), [r(2, 7)]),
    both("ifft", lambda F, a: F.ifft(a), [c(6)]),
    both("ifft_real_ortho", lambda F, a: F.ifft(a, n=9, norm="ortho"), [r(2, 6)]),
    both("ifft_forward", lambda F, a: F.ifft(a, dim=0, norm="forward"), [c(5, 2)]),
    # real-to-complex and complex-to-real (the subtle gradients)
    both("rfft_even", lambda F, a: F.rfft(a), [r(3, 8)]),
    both("rfft_odd_ortho", lambda F, a: F.rfft(a, norm="ortho"), [r(3, 7)]),
    both("rfft_n_forward", lambda F, a: F.rfft(a, n=10, dim=0, norm="forward"), [r(6, 2)]),
    both("irfft", lambda F, a: F.irfft(a), [c(2, 5)]),
    both("irfft_odd", lambda F, a: F.irfft(a, n=9), [c(2, 5)]),
    both("irfft_crop_ortho", lambda F, a: F.irfft(a, n=4, norm="ortho"), [c(2, 6)]),
    both("irfft_pad_forward", lambda F, a: F.irfft(a, n=14, dim=0, norm="forward"), [c(4, 3)]),
    both("hfft", lambda F, a: F.hfft(a), [c(2, 5)]),
    both("hfft_odd_ortho", lambda F, a: F.hfft(a, n=7, norm="ortho"), [c(3, 4)]),
    both("hfft_forward", lambda F, a: F.hfft(a, n=6, norm="forward"), [c(6)]),
    both("ihfft", lambda F, a: F.ihfft(a), [r(2, 8)]),
    both("ihfft_n_ortho", lambda F, a: F.ihfft(a, n=5, norm="ortho"), [r(2, 8)]),
    both("rfft_irfft_roundtrip", lambda F, a: F.irfft(F.rfft(a) * F.rfft(a), n=9), [r(2, 9)]),
    # n-dimensional
    both("fft2", lambda F, a: F.fft2(a), [c(2, 3, 4)]),
    both("fft2_real_s", lambda F, a: F.fft2(a, s=(5, 3), norm="ortho"), [r(4, 4)]),
    both("ifft2", lambda F, a: F.ifft2(a, dim=(0, 2)), [c(3, 2, 4)]),
    both("fftn_all", lambda F, a: F.fftn(a), [c(2, 3, 4)]),
    both("fftn_s_minus1", lambda F, a: F.fftn(a, s=(-1, 6), norm="forward"), [c(2, 3, 4)]),
    both("ifftn_real", lambda F, a: F.ifftn(a, dim=(0, -1)), [r(3, 2, 4)]),
    both("rfft2", lambda F, a: F.rfft2(a), [r(2, 4, 6)]),
    both("rfftn_s", lambda F, a: F.rfftn(a, s=(3, 7), dim=(2, 0), norm="ortho"), [r(4, 2, 5)]),
    both("irfft2", lambda F, a: F.irfft2(a), [c(3, 4)]),
    both("irfftn_s", lambda F, a: F.irfftn(a, s=(5, 7), norm="ortho"), [c(2, 4, 3)]),
    both("irfftn_dims", lambda F, a: F.irfftn(a, dim=(0, 2), norm="forward"), [c(3, 2, 4)]),
    both("hfft2", lambda F, a: F.hfft2(a), [c(3, 4)]),
    both("hfftn_s", lambda F, a: F.hfftn(a, s=(4, 5), dim=(0, 1), norm="ortho"), [c(3, 3, 2)]),
    both("hfftn_3d", lambda F, a: F.hfftn(a, norm="forward"), [c(2, 3, 3)]),
    both("ihfft2", lambda F, a: F.ihfft2(a), [r(3, 6)]),
    both("ihfftn_s", lambda F, a: F.ihfftn(a, s=(4, 5), norm="ortho"), [r(2, 3, 6)]),
    both("ihfftn_3d", lambda F, a: F.ihfftn(a, norm="forward"), [r(2, 3, 4)]),
    # shifts (rolls) and a composite through magnitude
    both("fftshift", lambda F, a: F.fftshift(a), [r(4, 5)]),
    both("ifftshift_dim", lambda F, a: F.ifftshift(a, dim=1), [c(4, 5)]),
    both("spectrum_power", lambda F, a: F.fftshift(F.rfft(a).abs() ** 2, dim=-1), [r(3, 10)]),
]

SECOND_ORDER = ["rfft_even", "irfft_odd", "fft_real", "hfft", "ihfftn_3d", "irfftn_s"]


@pytest.mark.parametrize("label,fn,torch_fn,args,kw", CASES, ids=[case[0] for case in CASES])
def test_fft_registry(label, fn, torch_fn, args, kw):
    check_op(fn, *args, torch_fn=torch_fn, name=label, second_order=label in SECOND_ORDER, **kw)


def test_every_function_is_in_the_registry():
    with open(__file__) as f:
        src = f.read()
    missing = [n for n in ember.fft.__all__ if f"F.{n}(" not in src and n not in ("fftfreq", "rfftfreq")]
    assert not missing, f"not in the registry: {missing}"


@pytest.mark.skipif(torch_or_none() is None, reason="needs torch")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_frequencies_match_torch(dtype):
    torch = T()
    for n, d in ((1, 1.0), (5, 0.5), (8, 2.0), (0, 1.0)):
        for name in ("fftfreq", "rfftfreq"):
            e = getattr(ember.fft, name)(n, d, dtype=getattr(ember, dtype))
            t = getattr(torch.fft, name)(n, d, dtype=getattr(torch, dtype))
            assert e.dtype.name == dtype
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    assert ember.fft.fftfreq(4).dtype == ember.get_default_dtype()
    assert ember.fft.rfftfreq(4, requires_grad=True).requires_grad


def test_dtypes():
    x32 = ember.tensor(r(8)).float()
    assert ember.fft.fft(x32).dtype == ember.complex64
    assert ember.fft.rfft(x32).dtype == ember.complex64
    assert ember.fft.irfft(ember.fft.rfft(x32)).dtype == ember.float32
    assert ember.fft.hfft(x32).dtype == ember.float32  # real input to hfft is promoted to complex first
    assert ember.fft.fft(ember.tensor(r(4))).dtype == ember.complex128
    assert ember.fft.fft(ember.arange(4)).dtype == ember.complex64  # integers: the default float's complex
    z = ember.fft.fftn(ember.tensor(2.0))  # a 0-d tensor has no dims to transform
    assert z.dtype == ember.complex64 and z.item() == 2


def test_round_trips_and_parseval():
    x = ember.tensor(r(3, 16))
    np.testing.assert_allclose(ember.fft.ifft(ember.fft.fft(x)).real.numpy(), x.numpy(), atol=1e-12)
    np.testing.assert_allclose(ember.fft.irfft(ember.fft.rfft(x), n=16).numpy(), x.numpy(), atol=1e-12)
    np.testing.assert_allclose(ember.fft.hfft(ember.fft.ihfft(x), n=16).numpy(), x.numpy(), atol=1e-12)
    energy = (ember.fft.fft(x, norm="ortho").abs() ** 2).sum(-1)
    np.testing.assert_allclose(energy.numpy(), (x**2).sum(-1).numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda x: ember.fft.fft(x, norm="bogus"), "Invalid normalization mode"),
        (lambda x: ember.fft.fft(x, n=0), "Invalid number of data points"),
        (lambda x: ember.fft.irfft(x, n=0), "Invalid number of data points"),
        (lambda x: ember.fft.rfft(x * 1j), "expects a real input tensor"),
        (lambda x: ember.fft.ihfftn(x * 1j), "expects a real input tensor"),
        (lambda x: ember.fft.fftn(x, dim=(0, -2)), "FFT dims must be unique"),
        (lambda x: ember.fft.fftn(x, s=(2, 3), dim=(0,)), "same length"),
        (lambda x: ember.fft.fftn(x, s=(2, 3, 4)), "only has 2 dimensions"),
        (lambda x: ember.fft.fft(x, dim=2), "out of range"),
        (lambda x: ember.fft.fft(ember.tensor(1.0)), "no dimensions"),
        (lambda x: ember.fft.rfftn(x, dim=()), "at least one axis"),
        (lambda x: ember.fft.fft(x.half()), "Unsupported dtype"),
        (lambda x: ember.fft.fft(x.numpy()), "expected a Tensor"),
    ],
)
def test_errors_are_clear_and_catchable(call, match):
    x = ember.tensor(r(3, 4))
    with pytest.raises((ValueError, TypeError, IndexError)) as info:
        call(x)
    assert isinstance(info.value, (RuntimeError, TypeError))
    assert match in str(info.value)


@pytest.mark.skipif(torch_or_none() is None, reason="needs torch")
def test_backend_kernels_agree_with_torch_aten():
    """The NumPy backend's reference kernels give aten's ``_fft_*`` results for every normalisation."""
    torch = T()
    be = ember.backends.get("numpy")
    x, z = r(3, 6), c(3, 4)
    for norm in (0, 1, 2):
        for fwd in (True, False):
            got = be.fft_c2c(z, (0, 1), norm, fwd)
            np.testing.assert_allclose(got, torch.ops.aten._fft_c2c(torch.tensor(z), [0, 1], norm, fwd), atol=1e-12)
        for one in (True, False):
            got = be.fft_r2c(x, (1, 0), norm, one)
            np.testing.assert_allclose(got, torch.ops.aten._fft_r2c(torch.tensor(x), [1, 0], norm, one), atol=1e-12)
        for last in (6, 7):
            got = be.fft_c2r(z, (0, 1), norm, last)
            np.testing.assert_allclose(got, torch.ops.aten._fft_c2r(torch.tensor(z), [0, 1], norm, last), atol=1e-12)


def test_empty_batches():
    """An empty batch transforms to an empty result of the right shape and dtype (torch's MKL path refuses them)."""
    x = ember.zeros(0, 8)
    assert ember.fft.fft(x).shape == (0, 8) and ember.fft.fft(x).dtype == ember.complex64
    assert ember.fft.rfft(x).shape == (0, 5)
    assert ember.fft.irfft(ember.fft.rfft(x), n=8).shape == (0, 8)
    assert ember.fft.ifft2(ember.zeros(0, 3, 4).cfloat()).shape == (0, 3, 4)
    assert ember.fft.rfftn(ember.zeros(3, 0, 4), dim=(0, 2)).shape == (3, 0, 3)
