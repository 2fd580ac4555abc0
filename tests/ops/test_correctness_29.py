"""Operator results and errors that differed from PyTorch (issue 29): the same code under Ember and torch.

``same(fn)`` compares values, dtypes and shapes of ``fn(ember)`` and ``fn(torch)``; ``both_raise`` checks
that both refuse, Ember with an error of a type PyTorch code catches.
"""

import math
import warnings

import numpy as np
import pytest

import ember
from ember.testing import torch_differentiates

torch = pytest.importorskip("torch")
inf = math.inf


def as_np(x):
    if isinstance(x, ember.Tensor):
        return x.detach().numpy(), x.dtype.name
    return x.detach().numpy(), str(x.dtype).replace("torch.", "").replace("ember.", "")


def same(fn, rtol=1e-7, atol=1e-12):
    e, t = fn(ember), fn(torch)
    es, ts = (e, t) if isinstance(e, (tuple, list)) else ((e,), (t,))
    assert len(es) == len(ts)
    for a, b in zip(es, ts, strict=True):
        (an, ad), (bn, bd) = as_np(a), as_np(b)
        assert an.shape == bn.shape, f"shape {an.shape} != torch {bn.shape}"
        assert ad == bd, f"dtype {ad} != torch {bd}"
        np.testing.assert_allclose(an.astype(float), bn.astype(float), rtol=rtol, atol=atol, equal_nan=True)
    return e


def both_raise(fn, exc=RuntimeError, match=None):
    with pytest.raises(exc):
        fn(torch)
    with pytest.raises(exc, match=match) as info:
        fn(ember)
    return info


def grads(L, fn, *values):
    xs = [L.tensor(v, dtype=L.float64, requires_grad=True) for v in values]
    y = fn(L, *xs)
    return tuple(L.autograd.grad([y], xs, [L.ones(y.shape, dtype=L.float64)], allow_unused=True))


def same_grads(fn, *values):
    for a, b in zip(grads(ember, fn, *values), grads(torch, fn, *values), strict=True):
        if a is None or b is None:
            assert (a is None or not a.numpy().any()) and (b is None or not b.numpy().any())
            continue
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12, equal_nan=True)


X = np.arange(12.0).reshape(3, 4) ** 1.5


# -- std / var -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["std", "var"])
def test_std_var_positional_unbiased_and_correction(name):
    def f(L):
        return getattr(L, name)

    same(lambda L: f(L)(L.tensor(X), True))  # a positional bool is `unbiased`, not a dim
    same(lambda L: f(L)(L.tensor(X), False))
    same(lambda L: getattr(L.tensor(X), name)(False))
    same(lambda L: f(L)(L.tensor(X), 1, True))  # (input, dim, unbiased)
    same(lambda L: f(L)(L.tensor(X), 1, False, True))  # (input, dim, unbiased, keepdim)
    same(lambda L: f(L)(L.tensor(X), unbiased=False))
    same(lambda L: f(L)(L.tensor(X), dim=1, unbiased=False, keepdim=True))
    same(lambda L: f(L)(L.tensor(X), correction=None))
    same(lambda L: f(L)(L.tensor(X), dim=0, correction=None))
    same(lambda L: f(L)(L.tensor(X), dim=(0, 1), correction=2))
    same(lambda L: f(L)(L.tensor(X), dim=None, correction=0, keepdim=True))


@pytest.mark.parametrize("name", ["std_mean", "var_mean"])
def test_std_mean_var_mean_positional_unbiased_and_correction(name):
    def f(L):
        return getattr(L, name)

    same(lambda L: f(L)(L.tensor(X), True))
    same(lambda L: f(L)(L.tensor(X), False))
    same(lambda L: f(L)(L.tensor(X), 1, True))
    same(lambda L: f(L)(L.tensor(X), 1, False, True))
    same(lambda L: f(L)(L.tensor(X), unbiased=False))
    same(lambda L: f(L)(L.tensor(X), dim=0, correction=None))
    same(lambda L: f(L)(L.tensor(X), [0], correction=0, keepdim=True))


# -- diff ------------------------------------------------------------------------------------------
def test_diff_with_n_zero_ignores_prepend_and_append():
    same(lambda L: L.diff(L.tensor(X), n=0, dim=0, prepend=L.zeros(1, 4), append=L.zeros(2, 4)))
    same(lambda L: L.diff(L.tensor(X), n=0))
    same(lambda L: L.diff(L.tensor(X), n=5, dim=0))  # more than the length: empty, as PyTorch
    same(lambda L: L.diff(L.tensor(X), n=2, dim=1, prepend=L.ones(3, 1)))
    both_raise(lambda L: L.diff(L.tensor(X), n=-1), match="non-negative")
    both_raise(lambda L: L.diff(L.tensor(1.0)), match="at least one-dimensional")


# -- linalg.pinv -----------------------------------------------------------------------------------
@pytest.mark.parametrize("a", [
    [[1.0, 2.0], [2.0, 4.0]],  # rank-deficient: the true pseudo-inverse, not an error
    [[1.0, 0.0, 0.0], [0.0, 1e-3, 0.0]],
    [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [1.0, 0.0, 1.0]],
    [[0.0, 0.0], [0.0, 0.0]],
])  # fmt: skip
def test_pinv_is_the_svd_pseudo_inverse(a):
    same(lambda L: L.linalg.pinv(L.tensor(a, dtype=L.float64)))
    same(lambda L: L.linalg.pinv(L.tensor(a, dtype=L.float64), rtol=1e-2))
    same(lambda L: L.linalg.pinv(L.tensor(a, dtype=L.float64), atol=0.5))
    same(lambda L: L.linalg.pinv(L.tensor(a, dtype=L.float64), atol=0.1, rtol=1e-2))
    same(lambda L: L.pinverse(L.tensor(a, dtype=L.float64), rcond=1e-2))


def test_pinv_hermitian_batched_and_its_gradient():
    sym = [[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 0.0]]
    same(lambda L: L.linalg.pinv(L.tensor(sym, dtype=L.float64), hermitian=True))
    same(lambda L: L.linalg.pinv(L.tensor([[2.0, 1.0], [1.0, -3.0]], dtype=L.float64), hermitian=True))
    batch = np.random.default_rng(0).standard_normal((2, 3, 4, 3))
    same(lambda L: L.linalg.pinv(L.tensor(batch)))
    same_grads(lambda L, a: L.linalg.pinv(a).sum() * 1.0, np.random.default_rng(1).standard_normal((3, 2)))
    same_grads(lambda L, a: (L.linalg.pinv(a) ** 2).sum(), np.random.default_rng(2).standard_normal((2, 4)))


# -- pointwise edge values ---------------------------------------------------------------------------
def test_pow_of_negative_infinity():
    same(lambda L: L.pow(L.tensor([-inf] * 6), L.tensor([0.3, 2.0, 3.0, -0.5, -2.0, 0.0])))
    same(lambda L: L.tensor([-inf, inf, -0.0]) ** 0.3)
    same(lambda L: L.tensor([-inf, inf, -0.0]) ** -0.5)
    same(lambda L: L.pow(L.tensor([-inf, -inf]), L.tensor([-3.0, 4.0])))


@pytest.mark.skipif(
    not torch_differentiates(lambda L, x: L.nextafter(x, x + 1)),
    reason=f"torch {torch.__version__} has no derivative for nextafter (2.13 has)",
)
def test_nextafter_passes_the_gradient_to_self():
    same_grads(lambda L, x, y: L.nextafter(x, y), [1.0, 2.0], [3.0, 0.0])
    same_grads(lambda L, x: L.nextafter(x, L.tensor([3.0, 0.0], dtype=L.float64)) * x, [1.0, 2.0])


# -- shapes of 0-d and (1, N) inputs --------------------------------------------------------------------
def test_corrcoef_and_cov_of_one_variable_are_0d():
    # float64: same()'s 1e-7 is below float32's ulp, and a CUDA reduction may round the last bit differently
    same(lambda L: L.corrcoef(L.tensor([[1.0, 2.0, 4.0]], dtype=L.float64)))
    same(lambda L: L.corrcoef(L.tensor([1.0, 2.0, 4.0], dtype=L.float64)))
    same(lambda L: L.cov(L.tensor([[1.0, 2.0, 4.0]], dtype=L.float64)))
    same(lambda L: L.corrcoef(L.tensor([[1.0, 2.0, 4.0], [0.0, 1.0, 1.0]], dtype=L.float64)))


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile_of_a_0d_tensor_keeps_0d(name):
    same(lambda L: getattr(L, name)(L.tensor(2.0), 0.5, dim=0, keepdim=True))
    same(lambda L: getattr(L, name)(L.tensor(2.0), 0.5, dim=-1))
    same(lambda L: getattr(L, name)(L.tensor(2.0), 0.5, keepdim=True))
    same(lambda L: getattr(L, name)(L.tensor(2.0), L.tensor([0.2, 0.5]), dim=0, keepdim=True))
    same(lambda L: getattr(L, name)(L.tensor([2.0, 3.0]), L.tensor([0.2, 0.5]), dim=0, keepdim=True))


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_check_dim_on_0d(name):
    both_raise(lambda L: getattr(L, name)(L.tensor(1.0), dim=1), IndexError)
    both_raise(lambda L: getattr(L, name)(L.tensor(1.0), dim=-2), IndexError)
    same(lambda L: getattr(L, name)(L.tensor(1.0), dim=-1))
    same(lambda L: getattr(L.tensor(1.0), name)(0))


# -- pad with negative widths ---------------------------------------------------------------------------
PADS = [
    (-3, 2),
    (-3, 4),
    (-1, 4),
    (2, -3),
    (4, -1),
    (-1, -1),
    (-2, 3, 1, -2),
    (3, -2, -4, 2),
    (0, 0, -2, -2),
    (-6, 2),
    (-3, -3, -3, 1),
]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "constant"])
def test_pad_with_negative_widths_crops_as_pytorch(mode):
    """Reflect and replicate pad the whole input, then crop (the mirror and the edge are the input's)."""
    x4 = np.arange(2 * 3 * 5 * 6, dtype=np.float64).reshape(2, 3, 5, 6)

    def padded(L, a, p):
        y = L.nn.functional.pad(a, p, mode=mode)
        return y * L.arange(1.0, 1.0 + math.prod(y.shape), dtype=L.float64).reshape(y.shape)

    for p in PADS:
        x = x4 if len(p) == 4 else x4[:, :, 0]
        if mode == "circular" and p in [(-3, 4), (3, -2, -4, 2), (-6, 2), (-3, -3, -3, 1)]:
            # more wrapping than the cropped input holds: PyTorch reads memory it never wrote; Ember refuses
            with pytest.raises(RuntimeError, match=r"circular padding|to nothing"):
                ember.nn.functional.pad(ember.tensor(x), p, mode=mode)
            continue
        try:
            torch.nn.functional.pad(torch.tensor(x), p, mode=mode)
        except RuntimeError:
            both_raise(lambda L, p=p, x=x: L.nn.functional.pad(L.tensor(x), p, mode=mode))
            continue
        same(lambda L, p=p, x=x: L.nn.functional.pad(L.tensor(x), p, mode=mode))
        same_grads(lambda L, a, p=p: padded(L, a, p), x)
    one_d = np.arange(5.0).reshape(1, 1, 5)
    for p in [(-5, 1), (-3, 2), (-6, 3), (2, -6)]:
        try:
            torch.nn.functional.pad(torch.tensor(one_d), p, mode=mode)
        except RuntimeError:
            both_raise(lambda L, p=p: L.nn.functional.pad(L.tensor(one_d), p, mode=mode))
            continue
        if mode != "circular":
            same(lambda L, p=p: L.nn.functional.pad(L.tensor(one_d), p, mode=mode))


# -- errors that misled -------------------------------------------------------------------------------
@pytest.mark.process_default  # its other backend is the one the process default is not
def test_matmul_across_backends_names_the_backends():
    other = ember.ones(2, 2).to(ember.backends.get("numpy" if ember.backends.current() == "torch" else "torch"))
    for op in (lambda a, b: a @ b, ember.matmul, ember.mm, ember.bmm, ember.dot, ember.outer, ember.einsum):
        args = (ember.ones(2, 2), other)
        if op is ember.bmm:
            args = (ember.ones(1, 2, 2), other.reshape(1, 2, 2))
        if op in (ember.dot, ember.outer):
            args = (ember.ones(2), other[0])
        if op is ember.einsum:
            with pytest.raises(RuntimeError, match=r"numpy backend.*torch backend|same device and backend"):
                ember.einsum("ij,jk->ik", *args)
            continue
        with pytest.raises(RuntimeError, match="same device and backend"):
            op(*args)


@pytest.mark.parametrize("value", [lambda L: L.ones(3), lambda L: np.ones(2), lambda L: L.ones(2, dtype=L.int64),
                                   lambda L: [1.0, 1.0]])  # fmt: skip
def test_grad_assignment_is_checked(value):
    def assign(L):
        x = L.ones(2, requires_grad=True)
        x.grad = value(L)

    both_raise(assign, (RuntimeError, TypeError))
    for L in (ember, torch):
        x = L.ones(2, requires_grad=True)
        x.grad = L.full((2,), 3.0)
        x.grad = None
        assert x.grad is None


def test_requires_grad_false_on_a_non_leaf_is_refused():
    def f(L):
        y = L.ones(2, requires_grad=True) * 2
        y.requires_grad = False

    def g(L):
        y = L.ones(2, requires_grad=True) * 2
        y.requires_grad = True  # PyTorch refuses any assignment on a computed tensor

    both_raise(f, RuntimeError, match="leaf")
    both_raise(g, RuntimeError, match="leaf")
    both_raise(lambda L: (L.ones(2, requires_grad=True) * 2).requires_grad_(False), RuntimeError, match="leaf")
    for L in (ember, torch):
        y = L.ones(2, requires_grad=True) * 2
        assert y.requires_grad_(True) is y and y.requires_grad  # the method with True is a no-op there
        x = L.ones(2)
        x.requires_grad = True
        x.requires_grad = False
        assert not x.requires_grad


def test_grad_of_a_non_leaf_warns_as_pytorch():
    for L in (ember, torch):
        y = L.ones(2, requires_grad=True) * 2
        y.sum().backward()
        with pytest.warns(UserWarning, match="not a leaf"):
            assert y.grad is None
        y = L.ones(2, requires_grad=True) * 2
        y.retain_grad()
        y.sum().backward()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert y.grad is not None
        z = L.ones(2) * 2  # no grad at all: no warning
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert z.grad is None


def test_where_needs_a_bool_condition():
    both_raise(lambda L: L.where(L.tensor([1.0, 0.0]), L.ones(2), L.zeros(2)), match="bool")
    both_raise(lambda L: L.where(L.tensor([1, 0]), L.ones(2), L.zeros(2)), match="bool")
    same(lambda L: L.where(L.tensor([True, False]), L.ones(2), L.zeros(2)))
    same(lambda L: L.where(L.tensor([1.0, 0.0]) > 0, L.ones(2), 0.0))


def test_legacy_constructors_refuse_a_float_size():
    for name in ("FloatTensor", "LongTensor", "DoubleTensor"):
        both_raise(lambda L, name=name: getattr(L, name)(2.5), TypeError)
        same(lambda L, name=name: getattr(L, name)(2, 3).fill_(1))
        same(lambda L, name=name: getattr(L, name)([2.5, 1.0]))


def test_repeat_with_a_negative_count_names_repeat():
    both_raise(lambda L: L.ones(2).repeat(-1), match="repeat")
    both_raise(lambda L: L.ones(2).repeat(2, -1), match="repeat")
    same(lambda L: L.ones(2).repeat(0))


@pytest.mark.parametrize("target", ["mps", "xla", "bogus"])
def test_to_an_unknown_or_absent_device_says_device(target):
    both_raise(lambda L: L.ones(2).to(target), RuntimeError, match="device")


# -- type promotion: a 0-d tensor beside a dimensioned one ----------------------------------------------------
_DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"]


@pytest.mark.parametrize("dim_dtype", _DTYPES)
def test_a_0d_tensor_is_weak_beside_a_dimensioned_one(dim_dtype):
    """float32 (n,) + float64 () is float32 in PyTorch (0-d operands widen only across categories)."""
    for zero_dtype in _DTYPES:
        got = {}
        for L in (ember, torch):
            a = L.ones(3, dtype=getattr(L, dim_dtype))
            z = L.tensor(1, dtype=getattr(L, zero_dtype))
            got[L.__name__] = [
                str(r.dtype).replace("torch.", "").replace("ember.", "") for r in (a * z, z * a, L.where(a > 0, a, z))
            ]
        assert got["ember"] == got["torch"], (dim_dtype, zero_dtype)


def test_0d_promotion_keeps_values_and_the_gradient_dtype():
    for L in (ember, torch):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        s = L.tensor(0.5, dtype=L.float64, requires_grad=True)
        y = x * s
        y.sum().backward()
        assert y.dtype == L.float32 and s.grad.dtype == L.float64 and tuple(s.grad.shape) == ()
        assert s.grad.item() == 3.0
    for L in (ember, torch):  # the losses that broadcast first: a 0-d target promotes like a dimensioned one
        F = L.nn.functional
        x, t = L.ones(3), L.tensor(0.5, dtype=L.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dtypes = [f(x, t).dtype for f in (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss)]
        assert dtypes == [L.float64, L.float64, L.float64, L.float32]
        assert L.block_diag(L.ones(2, 2), L.tensor(2.0, dtype=L.float64)).dtype == L.float32


@pytest.mark.parametrize(
    ("into", "other"), [("bool", "int64"), ("bool", "float32"), ("int64", "float32"), ("uint8", "float64")]
)
def test_in_place_result_of_a_higher_category_is_refused(into, other):
    """PyTorch refuses to write an int result into a bool tensor in place (Ember kept it as bool)."""
    for L in (ember, torch):
        a = L.ones(3, dtype=getattr(L, into))
        with pytest.raises(RuntimeError, match=r"cast|cannot be written"):
            a.add_(L.ones(3, dtype=getattr(L, other)))
        assert a.tolist() == L.ones(3, dtype=getattr(L, into)).tolist()


@pytest.mark.parametrize("weights", ["f", "a", "fa"])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov_with_frequency_and_importance_weights(weights, correction):
    """op_db's cov samples with fweights/aweights: values and the gradients of input and aweights."""
    rng = np.random.default_rng(3)
    x, fw, aw = rng.standard_normal((3, 6)), rng.integers(0, 4, 6), rng.random(6)
    got = []
    for L in (ember, torch):
        tx, ta = L.tensor(x, requires_grad=True), L.tensor(aw, requires_grad=True)
        kw = {"fweights": L.tensor(fw) if "f" in weights else None, "aweights": ta if "a" in weights else None}
        c = L.cov(tx, correction=correction, **kw)
        c.sum().backward()
        got.append([c.detach().numpy(), tx.grad.numpy(), None if ta.grad is None else ta.grad.numpy()])
    for a, b in zip(*got, strict=True):
        assert (a is None and b is None) or np.allclose(a, b)


@pytest.mark.parametrize(
    "kw", [{"fweights": [1.0, 2.0]}, {"aweights": [1, 2]}, {"fweights": [1, -1]}, {"aweights": [1.0]}]
)
def test_cov_refuses_bad_weights(kw):
    for L in (ember, torch):
        with pytest.raises(RuntimeError, match="weights"):
            L.cov(L.ones(2, 2), **{k: L.tensor(v) for k, v in kw.items()})


# -- found by PyTorch's op_db (all OpInfos, first 5 float64 samples) ------------------------------------------
def test_op_db_edge_cases_match_pytorch():
    rng = np.random.default_rng(5)
    x4, w = rng.standard_normal((1, 1, 5, 5)), rng.standard_normal((1, 1, 3, 3))
    m = rng.standard_normal((4, 5))
    got = []
    for L in (ember, torch):
        F = L.nn.functional
        r = [F.alpha_dropout(L.ones(3, 3), p=1.0, training=True).tolist()]  # was a ZeroDivisionError
        x, s = L.tensor(2.0, requires_grad=True), L.tensor(3.0, requires_grad=True)
        y = L.index_add(x, 0, L.tensor([0]), s, alpha=-1)  # a 0-d input and source
        y.backward()
        r += [
            y.item(),
            tuple(y.shape),
            tuple(s.grad.shape),
            L.index_copy(L.tensor(2.0), 0, L.tensor([0]), L.tensor(5.0)).item(),
        ]
        t = L.from_numpy(x4)  # one-element tuples stand for every spatial dim
        r += [F.avg_pool2d(t, (3,), (1,), (1,)).sum().item(), tuple(F.max_pool2d(t, (3,), padding=(1,)).shape),
              F.conv2d(t, L.from_numpy(w), padding=(1,), stride=(2,)).sum().item()]  # fmt: skip
        a = L.from_numpy(m.copy()).requires_grad_(True)
        n = L.norm(a, "nuc")  # the nuclear norm of a matrix
        n.backward()
        r += [n.item(), a.grad.numpy().round(10).tolist(), L.norm(a, 0).requires_grad]  # p=0: in the graph
        got.append(r)
    e, t = got
    assert len(e) == len(t)
    for a, b in zip(e, t, strict=True):
        assert a == pytest.approx(b) if isinstance(a, float) else a == b


def test_tri_indices_honour_dtype_and_pool_stride_empty_means_default():
    """tril/triu_indices ignored dtype (int64 always); an empty stride tuple is the kernel size (PyTorch)."""
    for L in (ember, torch):
        assert L.tril_indices(3, 3, dtype=L.int32).dtype == L.int32 and L.triu_indices(2, 2).dtype == L.int64
        with pytest.raises(RuntimeError):
            L.triu_indices(3, 3, dtype=L.float64)
        assert tuple(L.nn.functional.avg_pool2d(L.ones(1, 1, 4, 4), 2, stride=()).shape) == (1, 1, 2, 2)
