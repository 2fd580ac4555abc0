"""The 8-bit float dtypes (PyTorch's float8_e4m3fn, e5m2, e4m3fnuz, e5m2fnuz, e8m0fnu): storage, casts to and from
float32 bit for bit as PyTorch's, finfo, and the promotion and operators PyTorch refuses -- each run under both."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._errors import DTypeError

torch = pytest.importorskip("torch")
NAMES = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"]


def _needs(name: str) -> None:
    """Skip, with the reason, on a default backend without the dtype (CuPy has no float8 and no uint16/32/64)."""
    be = ember.backends.get_backend()
    try:
        be.native_dtype(getattr(ember, name))
    except DTypeError as e:
        pytest.skip(f"the {be.name} backend has no {name}: {e}")


def _values() -> np.ndarray:
    rng = np.random.default_rng(0)
    scaled = rng.standard_normal(4000).astype(np.float32) * np.float32(10) ** rng.integers(-12, 8, 4000)
    special = [np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 448, 464, 465, 480, 500, 1e6, -1e6, 57344, 61439, 61440,
               1e-40, 2**-10, 2**-9 * 1.5, -1.5, 2.0**-127, 240, 248, 3.0, 0.75]  # fmt: skip
    bits = rng.integers(0, 2**32, 20000, dtype=np.uint32).view(np.float32)  # every kind of float32, NaNs included
    return np.concatenate([scaled.astype(np.float32), np.array(special, np.float32), bits])


def _host(t) -> np.ndarray:
    return t.cpu().numpy()


@pytest.mark.parametrize("name", NAMES)
def test_casts_bit_exact(name):
    """Against PyTorch on the kind of device Ember computes on. A NaN's payload is the device's: on the CPU PyTorch
    converts float8_e5m2 through float16 in software (a NaN keeps its payload bits, 0x7D -> 0x7FE00000); on CUDA the
    hardware conversion gives the canonical NaN (0x7FFFFFFF, the sign kept), as on the H200."""
    _needs(name)
    dev = "cuda" if ember.get_default_device().type == "cuda" else "cpu"
    x = _values()
    t8 = torch.from_numpy(x).to(dev).to(getattr(torch, name))
    e8 = ember.tensor(x).to(getattr(ember, name))
    assert e8.dtype is getattr(ember, name) and e8.element_size() == 1 and e8.is_floating_point()
    np.testing.assert_array_equal(_host(e8.view(ember.uint8)), _host(t8.view(torch.uint8)))
    # every one of the 256 values back to float32 and float64, bit for bit (NaN payloads included)
    every = np.arange(256, dtype=np.uint8)
    ta = torch.from_numpy(every).to(dev).view(getattr(torch, name))
    ea = ember.tensor(every).view(getattr(ember, name))
    np.testing.assert_array_equal(_host(ea.float().view(ember.int32)), _host(ta.float().view(torch.int32)))
    np.testing.assert_array_equal(_host(ea.double().view(ember.int64)), _host(ta.double().view(torch.int64)))
    np.testing.assert_array_equal(_host(ea.half().float()), _host(ta.half().float()))  # (NaN == NaN here)
    # float64 sources go through float32, as PyTorch's conversion does
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64) * 1.0000001
    np.testing.assert_array_equal(
        _host(ember.tensor(x64).to(getattr(ember, name)).view(ember.uint8)),
        _host(torch.from_numpy(x64).to(dev).to(getattr(torch, name)).view(torch.uint8)),
    )
    # from one float8 to another
    np.testing.assert_array_equal(
        _host(ea.to(ember.float8_e5m2).view(ember.uint8)), _host(ta.to(torch.float8_e5m2).view(torch.uint8))
    )


@pytest.mark.parametrize("name", NAMES)
def test_creation_writes_and_finfo(name):
    _needs(name)
    vals = [1.0, 500.0, -3.3, 0.0, float("inf"), 1e-3]
    outs = []
    for lib in (torch, ember):
        d = getattr(lib, name)
        a = lib.tensor(vals, dtype=d)
        a[1] = 1000.0
        b = lib.full((3,), 100.0, dtype=d)
        z = lib.zeros(2, dtype=d)
        outs.append([a.tolist(), b.tolist(), z.tolist(), a[1:4].reshape(3, 1).clone().tolist(), a.dtype.itemsize])
        f = lib.finfo(d)
        outs[-1].append([f.bits, f.eps, f.max, f.min, f.tiny, f.smallest_normal, f.resolution])
    np.testing.assert_equal(outs[1], outs[0])


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_promotion_and_arithmetic_refused(lib):
    if lib is ember:
        _needs("float8_e4m3fn")
    a = lib.tensor([1.0, 2.0]).to(lib.float8_e4m3fn)
    with pytest.raises(RuntimeError, match="Promotion for Float8"):
        lib.promote_types(lib.float8_e4m3fn, lib.float32)
    with pytest.raises(RuntimeError, match="Promotion for Float8"):
        a.float() + a
    for f in (lambda: a + a, lambda: a.sum(), lambda: -a, lambda: a * 2):
        with pytest.raises(NotImplementedError):
            f()
    assert (a.float() * 2).tolist() == [2.0, 4.0]
    assert lib.promote_types(lib.float8_e5m2, lib.float8_e5m2) == lib.float8_e5m2


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64"])
def test_wide_unsigned_storage_casts_and_refusals(name):
    _needs(name)
    got = []
    for lib in (torch, ember):
        d = getattr(lib, name)
        a = lib.tensor([1, 65535, 7], dtype=lib.int64).to(d)
        row = [str(a.dtype).split(".")[1], a.dtype.is_signed, a.dtype.itemsize, a.is_floating_point(), a.tolist()]
        row += [a.float().tolist(), a[1:].clone().tolist(), a.long().tolist(), lib.zeros(2, dtype=d).tolist()]
        row += [lib.tensor([3, 9], dtype=d).tolist(), lib.iinfo(d).max, lib.iinfo(d).min, lib.iinfo(d).bits]
        with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64"):
            lib.promote_types(d, lib.int32)
        with pytest.raises(NotImplementedError):
            a + a
        got.append(row)
    assert got[1] == got[0]


def test_uint64_beyond_int64_from_python_ints():
    _needs("uint64")
    data = [[2**64 - 1, 3], [2**63, 0]]  # NumPy alone reads this mix as float64 (2**64 - 1 would become 2**64)
    assert ember.tensor(data, dtype=ember.uint64).tolist() == torch.tensor(data, dtype=torch.uint64).tolist() == data
    for lib in (torch, ember):
        with pytest.raises(ValueError):  # no dtype given: int64, which cannot hold it
            lib.tensor([2**64 - 1, 3])
