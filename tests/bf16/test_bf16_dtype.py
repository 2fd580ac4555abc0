"""bfloat16 as a dtype against PyTorch 2.13 (CPU): creation, conversions both ways (bits: round to nearest even,
NaN, inf, subnormals), finfo, promotion, in-place writes and views, ``.numpy()``, printing, collation."""

from __future__ import annotations

import numpy as np
import pytest

import ember

from ._parity import compare, get_torch, make, torch_device, without_bfloat16

pytestmark = without_bfloat16()

# float32 values around bfloat16's rounding points: ties to even, carries into the exponent, overflow to inf,
# subnormals, NaN, signed zero
EDGES = np.array(
    [1.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, 1.99609375, 2 - 2**-9, 3.3895e38, 3.39e38, 3.4028235e38,
     -3.4e38, 1e-40, -9.2e-41, 1e-45, 0.0, -0.0, np.inf, -np.inf, np.nan, 0.1, -2.5, 65504.0, 1e-8],
    np.float32,
)  # fmt: skip


def _bits(t) -> list[int]:
    """bfloat16 bits; every NaN as 0x7FC0 (PyTorch's vectorised cast writes 0xFFFF, its scalar one 0x7FC0)."""
    if isinstance(t, ember.Tensor):
        b = t._backend.bfloat16_bits(t._data).ravel()
    else:
        b = t.contiguous().view(get_torch().int16).cpu().numpy().view(np.uint16).ravel()
    nan = (b & 0x7F80) == 0x7F80
    nan &= (b & 0x7F) != 0
    return np.where(nan, 0x7FC0, b).tolist()


@pytest.mark.parametrize("source", ["float32", "float64", "float16"])
def test_casts_to_bfloat16_give_torchs_bits(source: str) -> None:
    """Both ways, against PyTorch on the kind of device Ember computes on: a cast of NaN, an infinity or a value
    beyond an integer dtype is undefined in C, and PyTorch gives the device's answer. The rule, per device: on the
    CPU (x86) int32/int64 get their minimum (the "integer indefinite"; int16/int8/uint8 truncate that: 0); on CUDA a
    finite value beyond int32 saturates to its bound (seen on an H200), NaN gives whatever torch's CUDA cast gives."""
    torch = get_torch()
    dev = torch_device()
    a = EDGES.astype(source) if source != "float16" else EDGES[np.abs(np.nan_to_num(EDGES)) < 6e4].astype(source)
    ours = ember.tensor(a).to(ember.bfloat16)
    theirs = torch.tensor(a, device=dev).to(torch.bfloat16)
    assert ours.dtype is ember.bfloat16 and _bits(ours) == _bits(theirs)
    assert _bits(ember.tensor(a).bfloat16()) == _bits(theirs)
    assert _bits(ember.tensor(a, dtype=ember.bfloat16)) == _bits(torch.tensor(a, dtype=torch.bfloat16, device=dev))
    wide = a.astype(np.float64)
    for back in ("float32", "float64", "float16", "int32", "int64", "int16", "int8", "uint8", "bool"):
        with np.errstate(invalid="ignore"):
            got = ours.to(getattr(ember, back)).cpu().numpy()
        want = theirs.to(getattr(torch, back)).cpu().numpy()
        np.testing.assert_array_equal(got, want, err_msg=back)
        if back in ("int32", "int64"):  # the undefined casts, by the device's rule
            info = np.iinfo(back)
            huge = ~np.isnan(wide) & (np.abs(wide) >= 2.0 ** (info.bits - 1))
            if dev == "cpu":
                assert (got[huge | np.isnan(wide)] == info.min).all(), back
            elif back == "int32":
                finite = huge & np.isfinite(theirs.float().cpu().numpy())  # (values bfloat16 kept finite)
                assert (got[finite] == np.where(wide[finite] > 0, info.max, info.min)).all(), back


def test_python_numbers_and_ints_become_bfloat16_as_in_torch() -> None:
    torch = get_torch()
    vals = [1.00390625, 257, 3.3895e38, 1e-40, float("nan"), -0.0, 1 / 3]
    assert _bits(ember.tensor(vals, dtype=ember.bfloat16)) == _bits(torch.tensor(vals, dtype=torch.bfloat16))
    ints = np.array([0, 1, 255, 256, 257, 259, -1000001, 2**31 - 1], np.int64)
    assert _bits(ember.tensor(ints).bfloat16()) == _bits(torch.tensor(ints).bfloat16())


def test_creation_with_dtype_bfloat16() -> None:
    torch = get_torch()
    for L in (ember, torch):
        assert L.zeros(2, 3, dtype=L.bfloat16).dtype == L.bfloat16
    cases = {
        "zeros": lambda L: L.zeros(2, 3, dtype=L.bfloat16),
        "ones": lambda L: L.ones(4, dtype=L.bfloat16),
        "full": lambda L: L.full((3,), 1.01, dtype=L.bfloat16),
        "arange": lambda L: L.arange(0, 300, 7, dtype=L.bfloat16),
        "arange_float": lambda L: L.arange(0.0, 2.0, 0.1, dtype=L.bfloat16),
        "linspace": lambda L: L.linspace(0, 1, 11, dtype=L.bfloat16),
        "eye": lambda L: L.eye(3, dtype=L.bfloat16),
        "zeros_like": lambda L: L.zeros_like(L.ones(2, dtype=L.bfloat16)),
        "full_like": lambda L: L.full_like(L.ones(2, dtype=L.bfloat16), 0.3),
        "new_ones": lambda L: L.ones(2, dtype=L.bfloat16).new_ones(3),
    }
    for name, fn in cases.items():
        compare(fn(ember), fn(torch), 0.0, name)
    for name in ("rand", "randn"):
        x = getattr(ember, name)(1000, dtype=ember.bfloat16)
        assert x.dtype is ember.bfloat16 and x.shape == (1000,)
    u = ember.rand(10000, dtype=ember.bfloat16).float().numpy()
    assert u.min() >= 0 and u.max() < 1  # never rounds up to 1
    assert ember.randint(0, 5, (4,), dtype=ember.bfloat16).dtype is ember.bfloat16
    assert ember.empty(3, dtype=ember.bfloat16).dtype is ember.bfloat16


def test_finfo_and_dtype_properties_match_torch() -> None:
    torch = get_torch()
    a, b = ember.finfo(ember.bfloat16), torch.finfo(torch.bfloat16)
    for f in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(a, f) == getattr(b, f), f
    x = ember.ones(2, dtype=ember.bfloat16)
    assert x.is_floating_point() and ember.bfloat16.is_floating_point and not ember.bfloat16.is_complex
    assert ember.bfloat16.itemsize == 2 and x.element_size() == 2 and x.nbytes == 4
    assert ember.is_floating_point(x) and x.is_signed()


def test_promotion_matches_torch() -> None:
    torch = get_torch()
    cases = {
        "bf16+f16": lambda L: make(L, [1.5], dtype="bfloat16") + make(L, [2.0], dtype="float16"),
        "bf16+f32": lambda L: make(L, [1.5]) + make(L, [2.0], dtype="float32"),
        "bf16+f64": lambda L: make(L, [1.5]) * make(L, [2.1], dtype="float64"),
        "bf16+float": lambda L: make(L, [1.5]) + 0.1,
        "float*bf16": lambda L: 0.3 * make(L, [1.5]),
        "bf16+int_tensor": lambda L: make(L, [1.5]) + L.tensor([3]),
        "bf16+zero_dim_f32": lambda L: make(L, [1.5, 2.5]) + L.tensor(0.1),
        "zero_dim_bf16+f32": lambda L: make(L, 1.5) + L.tensor([0.1]),
        "int_tensor*bf16_scalar_tensor": lambda L: L.tensor([3, 4]) * make(L, 1.5),
        "bf16/int": lambda L: make(L, [1.5]) / 3,
        "bf16_where_f32": lambda L: L.where(L.tensor([True]), make(L, [1.5]), L.tensor([0.1])),
        "bf16.lerp": lambda L: make(L, [1.5]).lerp(make(L, [0.1]), 0.3),
        "nan_to_num": lambda L: L.nan_to_num(make(L, [np.nan, np.inf, -np.inf, 1.5])),  # bfloat16's extremes
        "layer_norm(bf16, f32 affine)": lambda L: L.nn.functional.layer_norm(
            make(L, [[1.5, 0.1, -2.0, 3.0]]), (4,), L.tensor([0.5, 1.0, 2.0, 0.3]), L.tensor([0.1, 0.0, 0.2, 0.0])
        ),
        "batch_norm(bf16, f32 stats)": lambda L: L.nn.functional.batch_norm(
            make(L, [[1.5, 0.1], [-2.0, 3.0]]), L.zeros(2), L.ones(2), L.tensor([0.5, 2.0]), L.tensor([0.1, 0.0])
        ),
    }
    for name, fn in cases.items():
        compare(fn(ember), fn(torch), 0.0, name)
    assert ember.promote_types(ember.bfloat16, ember.float16) is ember.float32
    assert ember.result_type(ember.ones(1, dtype=ember.bfloat16), 1.0) is ember.bfloat16


def test_in_place_writes_views_and_indexing() -> None:
    torch = get_torch()
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)

    def run(L):
        x, y = make(L, a), make(L, b)
        v = x[1:3]  # a view: writes through it land in x
        v.mul_(1.7)
        x.add_(y, alpha=0.5)
        x[0] = 0.1
        x[:, 2] += y[:, 1]
        x.t()[4].copy_(y[0, :4] * 3)
        x.clamp_(-1.5, 1.5)
        x.addcmul_(y, y, value=0.25)
        z = x.view(-1)[::3].exp_()  # noqa: F841  (an in-place op on a strided view of x)
        x.masked_fill_(x > 1.4, -2.0)
        return x

    compare(run(ember), run(torch), 0.0, "in-place")


def test_numpy_tolist_item_and_printing() -> None:
    x = ember.tensor([1.0, 1 + 2**-8, 2.5, float("nan")], dtype=ember.bfloat16)
    # PyTorch raises TypeError ("Got unsupported ScalarType BFloat16"); Ember gives the exact float32 values
    arr = x.numpy()
    assert arr.dtype == np.float32 and arr[:3].tolist() == [1.0, 1.0, 2.5] and np.isnan(arr[3])
    assert x[:3].tolist() == [1.0, 1.0, 2.5] and x[2].item() == 2.5 and float(x[2]) == 2.5
    assert "0.1001" in repr(ember.tensor([1.0, 0.1], dtype=ember.bfloat16))  # bfloat16's 0.1 is 0.10009765625


def test_default_collate_keeps_bfloat16() -> None:
    from ember.data import default_collate

    xs = [ember.tensor([1.0, 0.1], dtype=ember.bfloat16) for _ in range(3)]
    batch = default_collate(xs)
    assert batch.dtype is ember.bfloat16 and batch.shape == (3, 2)
    assert _bits(batch) == _bits(xs[0]) * 3
    loader = ember.data.DataLoader(ember.data.TensorDataset(ember.ones(5, 2, dtype=ember.bfloat16)), batch_size=2)
    assert {b[0].dtype for b in loader} == {ember.bfloat16}


def test_ndtr_keeps_small_tails_where_torch_rounds_them_to_zero() -> None:
    """PyTorch 2.13's CPU ``special.ndtr`` gives 0 for bfloat16 -4.3125 (float32 says 8.08e-6) and for -8.5 even in
    float32 (9.48e-18 is a normal float32): a PyTorch precision loss. Ember's NumPy backend gives the correctly
    rounded value (its torch backend runs torch's kernel)."""
    import math

    x = [-8.5, -4.3125, -7.9375, -1.765625, 0.5]
    numpy_cpu = ember.backends.get("numpy").device
    got = ember.special.ndtr(ember.tensor(x, dtype=ember.bfloat16, device=numpy_cpu))
    exact = ember.tensor([0.5 * math.erfc(-v / math.sqrt(2)) for v in x], dtype=ember.float64).bfloat16()
    assert got.dtype is ember.bfloat16 and _bits(got) == _bits(exact.to(numpy_cpu))
    assert got.float().numpy()[0] > 0
