"""Integer convolutions and average pools as PyTorch's CPU kernels: conv1d/2d/3d of any integer dtype in that dtype
(exact, wrapping), conv_transpose, dilated convs and avg_pool of int64 only (avg_pool: the window's integer sum
divided, truncated toward 0); bool and the dtypes PyTorch has no kernel for refused. (Ember computed them in
float32: int64 results came back float32 and wrong past 2**24.)"""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

from .test_opdb_sweep_fixes import same  # noqa: E402 - after the skip, as the module they come from

RANGES = {"int64": (-(2**40), 2**40), "int32": (-(2**20), 2**20), "int16": (-3000, 3000), "int8": (-128, 128),
          "uint8": (0, 256)}  # fmt: skip
GEOMETRY = {"k3p1": (3, 1, 1, 1), "k2s2": (2, 2, 0, 1), "k3s2g2": (3, 2, 1, 2), "k1g4": (1, 1, 0, 4)}


@pytest.mark.parametrize("geometry", sorted(GEOMETRY))
@pytest.mark.parametrize("dtype", sorted(RANGES))
@pytest.mark.parametrize("sp", [1, 2, 3])
def test_integer_conv_is_exact_in_the_input_dtype(sp, dtype, geometry):
    k, s, p, g = GEOMETRY[geometry]
    rng = np.random.default_rng(sp)
    lo, hi = RANGES[dtype]
    x = rng.integers(lo, hi, (2, 4) + (6,) * sp)
    w = rng.integers(0 if dtype == "uint8" else -100, 100, (4, 4 // g) + (k,) * sp)
    b = rng.integers(0, 50, (4,))

    def run(L):
        t = lambda a: L.tensor(a, dtype=getattr(L, dtype))
        return getattr(L.nn.functional, f"conv{sp}d")(t(x), t(w), t(b), stride=s, padding=p, groups=g)

    same(run, rtol=0, atol=0)


@pytest.mark.parametrize("sp", [1, 2, 3])
def test_int64_conv_transpose_and_dilated_conv_are_exact(sp):
    rng = np.random.default_rng(7)
    x = rng.integers(-(2**40), 2**40, (2, 4) + (5,) * sp)
    w = rng.integers(-100, 100, (4, 3) + (3,) * sp)
    f = f"conv_transpose{sp}d"
    same(lambda L: getattr(L.nn.functional, f)(L.tensor(x), L.tensor(w), None, 2, 1, 1, 1, 2), rtol=0, atol=0)
    w2 = rng.integers(-100, 100, (3, 4) + (2,) * sp)
    same(lambda L: getattr(L.nn.functional, f"conv{sp}d")(L.tensor(x), L.tensor(w2), dilation=2), rtol=0, atol=0)


@pytest.mark.parametrize(
    "call",
    [
        lambda L, t: L.nn.functional.conv2d(t("bool", (1, 2, 4, 4)), t("bool", (3, 2, 2, 2))),
        lambda L, t: L.nn.functional.conv_transpose2d(t("int32", (1, 2, 4, 4)), t("int32", (2, 3, 2, 2))),
        lambda L, t: L.nn.functional.conv_transpose1d(t("uint8", (1, 2, 4)), t("uint8", (2, 3, 2))),
        lambda L, t: L.nn.functional.conv2d(t("int32", (1, 2, 5, 5)), t("int32", (3, 2, 2, 2)), dilation=2),
    ],
    ids=["bool", "transposed_int32", "transposed_uint8", "dilated_int32"],
)
def test_integer_convs_pytorch_has_no_kernel_for_are_refused(call):
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            call(L, lambda dt, shape, L=L: L.ones(shape, dtype=getattr(L, dt)))


POOLS = {
    "k2": dict(kernel_size=2),
    "k3s2p1_ceil": dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    "k3s2p1_ceil_nopad": dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    "k2s1p1_nopad": dict(kernel_size=2, stride=1, padding=1, count_include_pad=False),
    "whole_plane": dict(kernel_size=7),
    "divisor": dict(kernel_size=3, stride=3, padding=1, ceil_mode=True, divisor_override=3),
    "whole_plane_divisor": dict(kernel_size=7, divisor_override=5),
}


@pytest.mark.parametrize("pool", sorted(POOLS))
@pytest.mark.parametrize("sp", [1, 2, 3])
def test_int64_avg_pool_truncates_the_integer_mean(sp, pool):
    kw = dict(POOLS[pool])
    if sp == 1 and "divisor_override" in kw:
        pytest.skip("avg_pool1d has no divisor_override")
    x = np.random.default_rng(sp).integers(-(2**50), 2**50, (2, 3) + (7,) * sp)
    same(lambda L: getattr(L.nn.functional, f"avg_pool{sp}d")(L.tensor(x), **kw), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool"])
def test_avg_pool_of_other_integer_dtypes_is_refused(dtype):
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            L.nn.functional.avg_pool2d(L.ones(1, 2, 4, 4, dtype=getattr(L, dtype)), 2)
