"""nn.functional results that once differed from PyTorch (issue 29): broadcasting cosine_similarity, the
transposed convolutions with output_padding >= stride, and interpolate's index arithmetic.

Each test runs the same code with ``L`` = ember and ``L`` = torch and compares values (and gradients).
"""

import itertools

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
rng = np.random.default_rng(29)


def _np(t):
    return t.detach().numpy()


def _grads(L, fn, arrays, upstream_seed=0):
    xs = [L.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
    y = fn(L, L.nn.functional, *xs)
    g = np.random.default_rng(upstream_seed).standard_normal(tuple(y.shape)).astype(arrays[0].dtype)
    gs = L.autograd.grad([y], xs, [L.from_numpy(g)])
    return _np(y), [_np(v) for v in gs]


def same(fn, *arrays, tol=1e-10):
    (ey, eg), (ty, tg) = _grads(ember, fn, arrays), _grads(torch, fn, arrays)
    assert ey.shape == ty.shape, f"shape {ey.shape} != torch {ty.shape}"
    np.testing.assert_allclose(ey, ty, rtol=tol, atol=tol)
    for i, (a, b) in enumerate(zip(eg, tg, strict=True)):
        assert a.shape == b.shape == arrays[i].shape, f"gradient {i}: {a.shape} vs torch {b.shape}"
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=f"gradient of input {i}")


@pytest.mark.parametrize(
    ("s1", "s2", "dim"),
    [
        ((1, 2, 3), (2, 1, 3), -2),
        ((1, 2, 3), (2, 1, 3), -1),
        ((4, 1), (1, 3), 0),
        ((3,), (2, 3), -1),
        ((2, 1, 5), (2, 4, 1), 1),
    ],
)
def test_cosine_similarity_broadcasts_before_the_norms(s1, s2, dim):
    """The norms are over the broadcast dim: computed over a size-1 dim first, values came out above 1."""
    a, b = rng.standard_normal(s1), rng.standard_normal(s2)
    same(lambda L, F, x, y: F.cosine_similarity(x, y, dim=dim), a, b)
    out = ember.nn.functional.cosine_similarity(ember.tensor(a), ember.tensor(b), dim=dim)
    assert float(out.abs().max()) <= 1 + 1e-12


@pytest.mark.parametrize(("sp", "groups", "dilation", "output_padding", "stride", "padding"), [
    (nd, g, d, op, s, p)
    for nd, g, d, op, s, p in itertools.product((1, 2, 3), (1, 2), (2, 3), (1, 2), (1, 2), (0, 1, 3))
    if op < max(s, d) and op >= s  # the combinations that once failed: output_padding of a stride or more
])  # fmt: skip
def test_conv_transpose_with_output_padding_of_a_stride_or_more(sp, groups, dilation, output_padding, stride, padding):
    n = 3 if sp < 3 else 2
    x = rng.standard_normal((2, 4) + (n,) * sp)
    w = rng.standard_normal((4, 3) + (2,) * sp)
    b = rng.standard_normal(3 * groups)
    kw = {"stride": stride, "padding": padding, "output_padding": output_padding, "groups": groups,
          "dilation": dilation}  # fmt: skip
    fn = getattr(torch.nn.functional, f"conv_transpose{sp}d")
    try:
        fn(torch.from_numpy(x), torch.from_numpy(w), **kw)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            getattr(ember.nn.functional, f"conv_transpose{sp}d")(ember.tensor(x), ember.tensor(w), **kw)
        return
    same(lambda L, F, x, w, b: getattr(F, f"conv_transpose{sp}d")(x, w, b, **kw), x, w, b)


def _interp(L, x, **kw):
    return _np(L.nn.functional.interpolate(L.from_numpy(x), **kw))


@pytest.mark.parametrize("mode", ["linear", "bilinear", "trilinear"])
def test_interpolate_keeps_a_dim_whose_size_does_not_change(mode):
    """PyTorch copies a dim whose size stays the same, whatever the scale_factor (1.0887 on 4 rows: 4 rows)."""
    sp = {"linear": 1, "bilinear": 2, "trilinear": 3}[mode]
    for shape, sf in [((4, 26, 3)[:sp], 1.0887207323300276), ((4, 3, 5)[:sp], (1.2385, 1.1, 1.3398)[:sp]),
                      ((5, 7, 2)[:sp], (1.1, 1.5, 1.0)[:sp])]:  # fmt: skip
        x = rng.standard_normal((2, 3) + shape)
        for ac in (False, True):
            kw = {"scale_factor": sf, "mode": mode, "align_corners": ac}
            np.testing.assert_allclose(_interp(ember, x, **kw), _interp(torch, x, **kw), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate_nearest_picks_the_rows_pytorch_picks(mode):
    """Source indices in float32 as PyTorch's kernels (28 -> 46 columns: column 23 reads 13, not 14)."""
    cases = [
        ((33, 28), {"size": (34, 46)}),
        ((36, 2), {"scale_factor": 2.3558712179035144}),
        ((36, 14), {"scale_factor": 2.0443015174551604}),
        ((24, 3), {"size": (44, 2)}),
        ((6, 22), {"size": (47, 41)}),
        ((7, 7), {"scale_factor": 1.1}),
        ((5, 9), {"scale_factor": 2.0}),
        ((13, 11), {"scale_factor": (0.7, 3.3)}),
        ((13, 11), {"scale_factor": 2.5, "recompute_scale_factor": True}),
    ]
    for shape, kw in cases:
        x = rng.standard_normal((1, 2) + shape).astype(np.float32)
        np.testing.assert_array_equal(_interp(ember, x, mode=mode, **kw), _interp(torch, x, mode=mode, **kw),
                                      err_msg=f"{shape} {kw}")  # fmt: skip
    for n, o in [(28, 46), (196, 86), (40, 54), (100, 97), (2, 2)]:
        x = rng.standard_normal((1, 1, n)).astype(np.float32)
        np.testing.assert_array_equal(_interp(ember, x, mode=mode, size=o), _interp(torch, x, mode=mode, size=o))
        np.testing.assert_array_equal(_interp(ember, x, mode=mode, scale_factor=o / n * 1.001),
                                      _interp(torch, x, mode=mode, scale_factor=o / n * 1.001))  # fmt: skip


def test_interpolate_antialias_is_not_silently_ignored():
    x = rng.standard_normal((1, 2, 5, 7)).astype(np.float32)
    kw = {"size": (9, 11), "mode": "bilinear", "antialias": True}
    np.testing.assert_allclose(_interp(ember, x, **kw), _interp(torch, x, **kw), rtol=1e-5, atol=1e-6)
    for kw in ({"size": (3, 4)}, {"size": (9, 11), "align_corners": True}):  # shrinking; align_corners
        ours = _interp(ember, x, mode="bilinear", antialias=True, **kw)
        np.testing.assert_allclose(ours, _interp(torch, x, mode="bilinear", antialias=True, **kw), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize(
    ("hw", "kw"),
    [((4, 5), {"size": (8, 9)}), ((7, 3), {"size": (2, 3)}), ((4, 5), {"scale_factor": 1.7}),
     ((7, 3), {"scale_factor": (0.6, 2.0)}), ((1, 6), {"size": (1, 1)}), ((4, 5), {"size": (4, 11)})],
)  # fmt: skip
def test_interpolate_bicubic_matches_pytorch(hw, kw, align):
    """op_db's bicubic samples were refused ('unsupported mode'): Keys' A = -0.75 taps, clamped at the border."""
    x = rng.standard_normal((2, 3, *hw))
    same(lambda L, F, t: F.interpolate(t, mode="bicubic", align_corners=align, **kw), x)
    x32 = x.astype(np.float32)
    e, t = (_np(L.nn.functional.interpolate(L.from_numpy(x32), mode="bicubic", **kw)) for L in (ember, torch))
    assert e.dtype == t.dtype and np.allclose(e, t, rtol=1e-5, atol=1e-5)


def test_interpolate_bicubic_gradcheck_and_empty_output_refused():
    x = ember.from_numpy(rng.standard_normal((1, 2, 3, 4))).requires_grad_(True)
    assert ember.autograd.gradcheck(lambda t: ember.nn.functional.interpolate(t, size=(5, 2), mode="bicubic"), (x,))
    for L in (ember, torch):
        with pytest.raises(RuntimeError):
            L.nn.functional.interpolate(L.ones(1, 1, 1, 6), scale_factor=(0.6, 2.0), mode="bicubic")
