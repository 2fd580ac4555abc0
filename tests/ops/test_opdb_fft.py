"""PyTorch's operator database, ``fft.*``, ``stft``/``istft`` and ``signal.windows.*``: every OpInfo's first samples in
float64 and complex128 run through Ember, outputs and gradients (of the sum of the outputs' real and imaginary parts)
compared with PyTorch's. Known deviations are listed with their reasons; the test fails on any other mismatch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # op_db imports it

from ._opdb_cases import Case, cases, to_ember  # noqa: E402

ALL = cases(("fft.", "stft", "istft", "signal.windows."), "spectral", ("float64", "complex128"))

#: (OpInfo name, sample index) -> why the sample is not run
DEVIATIONS: dict[tuple[str, int], str] = {}


def _fn(name):
    if name.startswith("fft."):
        return getattr(ember.fft, name[4:])
    if name.startswith("signal.windows."):
        return getattr(ember.signal.windows, name[len("signal.windows.") :])
    return getattr(ember, name)


def _run(c: Case):
    fn = _fn(c.name)
    inputs, kwargs = to_ember(c.inputs), to_ember(c.kwargs)
    if c.outputs is None:  # PyTorch refused this sample: Ember must refuse it too
        with pytest.raises(Exception):  # noqa: B017 - any clear error; PyTorch's types vary
            fn(*inputs, **kwargs)
        return
    out = fn(*inputs, **kwargs)
    (want,) = c.outputs
    got = out.detach().numpy()
    assert got.shape == want.shape, f"shape {got.shape} != PyTorch's {want.shape}"
    assert got.dtype == want.dtype, f"dtype {got.dtype} != PyTorch's {want.dtype}"
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9, err_msg="output")
    leaves = [(i, x) for i, x in enumerate(inputs) if isinstance(x, ember.Tensor) and x.requires_grad]
    if c.grads is None or not leaves or not out.requires_grad:
        return
    total = (ember.view_as_real(out) if out.dtype.is_complex else out).sum()
    gs = ember.autograd.grad(total, [x for _, x in leaves], allow_unused=True)
    for (i, x), g in zip(leaves, gs, strict=True):
        if c.grads[i] is None:
            continue
        got_g = np.zeros(x.shape) if g is None else g.numpy()
        np.testing.assert_allclose(got_g, c.grads[i], rtol=1e-6, atol=1e-8, err_msg=f"grad of input {i}")


def test_every_spectral_opinfo_is_covered():
    names = {n[4:] for n in ALL if n.startswith("fft.")}
    assert names == set(ember.fft.__all__) - {"fftfreq", "rfftfreq"}, names ^ set(ember.fft.__all__)
    windows = {n[len("signal.windows.") :] for n in ALL if n.startswith("signal.windows.")}
    assert windows == set(ember.signal.windows.__all__), windows ^ set(ember.signal.windows.__all__)
    assert "stft" in ALL and "istft" in ALL
    assert any(c.dtype == "complex128" for cs in ALL.values() for c in cs)


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.filterwarnings("ignore:A window was not provided:UserWarning")  # stft's, in both libraries
@pytest.mark.filterwarnings("ignore:The length of signal is shorter:UserWarning")  # istft's, in both libraries
@pytest.mark.filterwarnings("ignore:stft with return_complex=False is deprecated:UserWarning")
def test_opinfo(name):
    for c in ALL[name]:
        if (name, c.index) in DEVIATIONS:
            continue
        try:
            _run(c)
        except AssertionError as e:
            raise AssertionError(f"{name} sample {c.index} ({c.dtype}): {e}") from None
