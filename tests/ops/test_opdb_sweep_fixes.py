"""Differences from PyTorch that ``tools/opdb_sweep.py`` (op_db run through Ember) found: the same code under
Ember and torch, values, dtypes, shapes and gradients compared; errors checked for a type PyTorch code catches."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(x):
    if isinstance(x, ember.Tensor):
        return x.detach().numpy(), x.dtype.name
    return x.detach().numpy(), str(x.dtype).replace("torch.", "").replace("ember.", "")


def same(fn, rtol=1e-7, atol=1e-12):
    """``fn(ember)`` and ``fn(torch)`` give the same values, shapes and dtypes (a tensor or a tuple of them)."""
    e, t = fn(ember), fn(torch)
    es, ts = (e, t) if isinstance(e, (tuple, list)) else ((e,), (t,))
    assert len(es) == len(ts)
    for a, b in zip(es, ts, strict=True):
        (an, ad), (bn, bd) = _np(a), _np(b)
        assert an.shape == bn.shape, f"shape {an.shape} != torch {bn.shape}"
        assert ad == bd, f"dtype {ad} != torch {bd}"
        np.testing.assert_allclose(an, bn, rtol=rtol, atol=atol, equal_nan=True)
    return e


# -- writes through a 0-d view (NumPy's a[2] is a scalar copy; a[2, ...] is the view) ----------------------------
ZERO_D_WRITES = {
    "copy_": lambda L, x: x[2].copy_(L.tensor(9.0, dtype=L.float64)),
    "fill_": lambda L, x: x.select(0, 1).fill_(7.0),
    "add_": lambda L, x: x[-1].add_(1.5),
    "mul_": lambda L, x: x.view(5)[3].mul_(3.0),
    "2d": lambda L, x: x.view(5, 1)[4, 0].sub_(2.0),
    "index_fill_": lambda L, x: x[1].index_fill_(0, L.tensor(0), -1.0),
}


@pytest.mark.parametrize("grad", [False, True], ids=["plain", "graph"])
@pytest.mark.parametrize("name", sorted(ZERO_D_WRITES))
def test_inplace_writes_through_a_0d_view_reach_the_base(name, grad):
    def run(L):
        leaf = L.tensor(np.arange(1.0, 6.0), dtype=L.float64, requires_grad=grad)
        x = leaf * 2.0
        ZERO_D_WRITES[name](L, x)
        if not grad:
            return x
        (g,) = L.autograd.grad((x * L.tensor(np.arange(5.0), dtype=L.float64)).sum(), [leaf])
        return x, g

    same(run)


def test_select_scatter_of_a_0d_source_into_a_vector():
    src = np.array([1.0, 2.0, 3.0, 4.0, 5.0])

    def run(L):
        x = L.tensor(src, requires_grad=True)
        s = L.tensor(9.0, dtype=L.float64, requires_grad=True)
        y = L.select_scatter(x, s, 0, -2)
        gx, gs = L.autograd.grad((y * L.tensor(np.arange(5.0), dtype=L.float64)).sum(), [x, s])
        return y, gx, gs

    same(run)


def test_frexp_mantissa_gradient_is_two_to_the_minus_exponent():
    values = np.array([1.5, 3.0, -0.2, 0.0, 1e-310, 1.7e308, -np.inf, 7.0, np.nan])

    def run(L):
        x = L.tensor(values, requires_grad=True)
        m, e = L.frexp(x)
        (g,) = L.autograd.grad((m * L.tensor(np.arange(9.0), dtype=L.float64)).sum(), [x])
        return m, e, g

    same(run)
    x = ember.tensor([0.3, -5.0, 1e5], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: ember.frexp(t).mantissa, (x,))
    assert not ember.frexp(x).exponent.requires_grad


POLY_DTYPES = [
    ("float32", (3,), "int64", (3,)),
    ("float32", (), "float32", ()),
    ("float32", (3,), "float64", ()),
    ("float64", (), "float32", (3,)),
    ("float32", (3,), "float64", (3,)),
    ("int64", (3,), "int64", (3,)),
    ("float32", (3,), None, None),
]


@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "hermite_polynomial_h", "shifted_chebyshev_polynomial_w"])
@pytest.mark.parametrize("xd,xs,nd,ns", POLY_DTYPES)
def test_special_polynomials_take_pytorchs_result_dtype(name, xd, xs, nd, ns):
    """The result's dtype is that of ``(x, n)`` promoted (float32 x with int64 n stays float32, as in PyTorch)."""
    x = np.linspace(-0.9, 1.7, 3)[: (xs[0] if xs else 1)].reshape(xs)
    n = np.array([0, 3, 5])[: (ns[0] if ns else 1)].reshape(ns) if ns is not None else 4

    def run(L):
        xt = L.tensor(x, dtype=getattr(L, xd)) if xd != "int64" else L.tensor(np.round(x * 2), dtype=L.int64)
        nt = L.tensor(n, dtype=getattr(L, nd)) if nd is not None else n
        return getattr(L.special, name)(xt, nt)

    same(run, rtol=1e-5, atol=1e-5)


def test_ctc_loss_gradient_is_the_derivative_of_its_forward():
    """PyTorch's ctc_loss backward returns the gradient through a log_softmax it assumes (pytorch/pytorch#52241:
    gradcheck fails on its own log_probs); Ember's is the loss's derivative, and both agree on the logits."""
    rng = np.random.default_rng(0)
    logits, tg, il, tl = rng.standard_normal((5, 2, 4)), np.array([[1, 2], [3, 3]]), [5, 4], [2, 2]
    x = ember.tensor(logits, requires_grad=True)

    def loss(lp, L=ember, red="sum"):
        return L.nn.functional.ctc_loss(lp, L.tensor(tg), L.tensor(il), L.tensor(tl), reduction=red)

    assert ember.autograd.gradcheck(loss, (x,))
    assert ember.autograd.gradcheck(lambda t: loss(t.log_softmax(-1), red="mean"), (x,))
    for red in ("sum", "mean", "none"):
        got = []
        for L in (ember, torch):
            t = L.tensor(logits, requires_grad=True)
            (g,) = L.autograd.grad(loss(t.log_softmax(-1), L, red).sum(), [t])
            got.append(g.numpy())
        np.testing.assert_allclose(got[0], got[1], rtol=1e-9, atol=1e-12)


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta:UserWarning")
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_of_0d_tensors(reduce, include_self):
    """A 0-d input and source are one slice of one element (it crashed with an IndexError deep inside)."""

    def run(L):
        x = L.tensor(2.0, dtype=L.float64, requires_grad=True)
        s = L.tensor(3.0, dtype=L.float64, requires_grad=True)
        y = L.index_reduce(x, 0, L.tensor([0]), s, reduce, include_self=include_self)
        return (y, *L.autograd.grad(y * 1.5, [x, s]))

    same(run)
    for L in (ember, torch):  # a 0-d source into a 1-d input: both refuse
        with pytest.raises(RuntimeError):
            L.index_reduce(L.ones(1), 0, L.tensor([0]), L.tensor(3.0), reduce)


_R = np.random.default_rng(0)
LOSS_CASES = [  # (name, inputs (the last one the target), kwargs): op_db samples Ember refused
    ("multi_margin_loss", [np.array(1.15), np.array(0)], {}),
    ("multi_margin_loss", [_R.standard_normal(5), np.array([1])], {"p": 2}),
    ("multi_margin_loss", [_R.standard_normal(5), np.array(1)], {"reduction": "none"}),
    ("multi_margin_loss", [_R.standard_normal((3, 4)), np.array([1, 0, 3])], {"reduction": "none"}),
    ("multilabel_margin_loss", [np.array(-3.7), np.array(0)], {}),
    ("multilabel_margin_loss", [np.array(-3.7), np.array(-1)], {"reduction": "none"}),
    ("multilabel_margin_loss", [_R.standard_normal(5), np.array([3, 0, -1, 1, 2])], {"reduction": "none"}),
    ("margin_ranking_loss", [_R.standard_normal(4), _R.standard_normal(4), np.array([-0.6, 1, -1, 2.0])], {}),
    ("hinge_embedding_loss", [_R.standard_normal(4), np.array([-0.6, 1, -1, 2.0])], {"reduction": "none"}),
    ("cosine_embedding_loss", [_R.standard_normal((4, 3)), _R.standard_normal((4, 3)), np.array([-0.6, 1, -1, 2.0])],
     {"reduction": "none", "margin": 0.2}),
]  # fmt: skip


@pytest.mark.parametrize("k", range(len(LOSS_CASES)))
def test_margin_losses_take_pytorchs_shapes_and_target_values(k):
    """0-d inputs, a (1,) target for a (C,) input, and targets other than +-1 (PyTorch computes its formula)."""
    name, args, kw = LOSS_CASES[k]

    def run(L):
        a = [L.tensor(v, requires_grad=v.dtype.kind == "f" and i < len(args) - 1) for i, v in enumerate(args)]
        y = getattr(L.nn.functional, name)(*a, **kw)
        return (y, *L.autograd.grad(y.sum(), [t for t in a if t.requires_grad]))

    same(run, rtol=1e-10)


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta:UserWarning")
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_in_place_backward(reduce):
    """``index_reduce_`` on a non-leaf: the backward raised "modified by an in-place operation" (the out-of-place
    result saved the input that the copy back then overwrote)."""
    rng = np.random.default_rng(0)
    x0, s0 = rng.standard_normal((3, 4)), rng.standard_normal((3, 5))

    def run(L):
        x, s = L.tensor(x0, requires_grad=True), L.tensor(s0, requires_grad=True)
        y = x * 1.0
        y.index_reduce_(1, L.tensor([0, 2, 2, 3, 0]), s, reduce, include_self=True)
        return (y, *L.autograd.grad((y * y).sum(), [x, s]))

    same(run, rtol=1e-10)


@pytest.mark.parametrize("ratio", [(0.5, 0.5), [0.7, 0.4]])
def test_fractional_max_pool2d_takes_a_tuple_of_float_ratios(ratio):
    x0 = np.random.default_rng(0).standard_normal((1, 3, 9, 9))
    u = np.random.default_rng(1).uniform(size=(1, 3, 2))

    def run(L):
        x = L.tensor(x0, requires_grad=True)
        y = L.nn.functional.fractional_max_pool2d(x, 3, output_ratio=ratio, _random_samples=L.tensor(u))
        return (y, *L.autograd.grad(y.sum(), [x]))

    same(run)
    with pytest.raises(ValueError):
        ember.nn.functional.fractional_max_pool2d(ember.tensor(x0), 3, output_ratio=(1.5, 0.5))


# -- op_db's error_inputs that Ember computed instead of refusing (each refused by both, with PyTorch's type) ------
def _x(L, *shape, dtype="float32"):
    return L.ones(*shape, dtype=getattr(L, dtype))


REFUSED = {
    "gradient_repeated_dim": lambda L: L.gradient(_x(L, 3, 3), spacing=0.1, dim=(1, 1)),
    "isclose_negative_rtol": lambda L: L.isclose(_x(L, 2), _x(L, 2), rtol=-0.4),
    "isclose_negative_atol": lambda L: L.isclose(_x(L, 2), _x(L, 2), atol=-0.4),
    "masked_fill_complex_value": lambda L: L.masked_fill(_x(L, 2, 2), L.tensor(False), 1j),
    "masked_fill_complex_tensor": lambda L: L.masked_fill(_x(L, 2, dtype="int64"), L.tensor(False), L.tensor(1j)),
    "movedim_repeated_destination": lambda L: L.movedim(_x(L, 2, 3, 4, 5, 6), (1, 0, 2), (0, 4, -5)),
    "movedim_repeated_source": lambda L: L.movedim(_x(L, 2, 3, 4), (1, 1), (0, 2)),
    "narrow_bool_start": lambda L: L.narrow(_x(L, 20, 10, 5), -3, L.tensor(True), 3),
    "layer_norm_empty_shape": lambda L: L.nn.functional.layer_norm(_x(L, 1, 2, 3), ()),
    "rms_norm_empty_shape": lambda L: L.nn.functional.rms_norm(_x(L, 1, 2, 3), ()),
    "native_layer_norm_empty_shape": lambda L: L.native_layer_norm(_x(L, 1, 2, 3), (), None, None, 1e-5),
    "embedding_3d_weight": lambda L: L.nn.functional.embedding(L.tensor([[0, 0], [0, 0]]), _x(L, 1, 1, 1)),
    "huber_zero_delta": lambda L: L.nn.functional.huber_loss(_x(L, 5, 4), _x(L, 5, 4), delta=0),
    "huber_negative_delta": lambda L: L.nn.functional.huber_loss(_x(L, 5, 4), _x(L, 5, 4), delta=-1),
    "max_pool1d_no_channels": lambda L: L.nn.functional.max_pool1d(_x(L, 0, 10), 1),
    "max_pool1d_batch_no_channels": lambda L: L.nn.functional.max_pool1d(_x(L, 2, 0, 10), 1),
    "max_pool3d_no_channels": lambda L: L.nn.functional.max_pool3d(_x(L, 0, 1, 2, 10), 1),
    "prelu_2d_weight": lambda L: L.nn.functional.prelu(_x(L, 2, 8, 3), _x(L, 2, 4)),
    "rrelu_lower_above_upper": lambda L: L.nn.functional.rrelu(_x(L, 5, 5), lower=0.3, upper=0.1),
    "softshrink_negative_lambda": lambda L: L.nn.functional.softshrink(_x(L, 1), lambd=-0.5),
    "triplet_margin_negative": lambda L: L.nn.functional.triplet_margin_loss(*[_x(L, 3, 4)] * 3, margin=-1.0),
    "window_sparse_layout": lambda L: L.signal.windows.hann(3, layout=L.sparse_coo),
    "window_sparse_layout_general": lambda L: L.signal.windows.general_cosine(3, a=[0.5, 0.5], layout=L.sparse_coo),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_pytorchs_error_inputs_are_refused(name):
    with pytest.raises(Exception) as want:  # the type is what PyTorch raises, checked below
        REFUSED[name](torch)
    with pytest.raises(want.type):
        REFUSED[name](ember)


def test_the_checks_keep_valid_inputs():
    """The refusals above stop at the bad inputs: neighbours of each still compute what PyTorch computes."""
    same(lambda L: L.movedim(L.arange(24.0).reshape(2, 3, 4), (0, 1), (2, 0)))
    same(lambda L: L.narrow(L.arange(10.0), 0, L.tensor(2), 3))
    same(lambda L: L.nn.functional.max_pool1d(L.ones(0, 2, 10), 1))
    same(lambda L: L.nn.functional.softshrink(L.tensor([-1.0, 0.2, 3.0]), lambd=0.0))
    same(lambda L: L.nn.functional.rrelu(L.tensor([-1.0, 2.0]), lower=0.2, upper=0.2))
    same(lambda L: L.masked_fill(L.tensor([1 + 2j, 3j]), L.tensor([True, False]), 1j))
    same(lambda L: L.isclose(L.tensor([1.0, 2.0]), L.tensor([1.0, 2.1]), rtol=0.0, atol=0.0))


GATHERS = [
    ((), 0, [0]), ((), 0, 0), ((), 0, [0, 0]), ((), -1, [0]), ((3,), 0, np.ones((2, 0), np.int64)),
    ((3, 4), 1, np.ones((0,), np.int64)), ((3, 4), 1, [[0], [3]]), ((3,), 0, [2, 0]),
]  # fmt: skip


@pytest.mark.parametrize("k", range(len(GATHERS)))
def test_gather_result_has_the_index_shape(k):
    """A 0-d input with a (n,) index gives (n,) (Ember gave 0-d for n = 1); an empty index of another rank gives an
    empty result (Ember refused it)."""
    shape, dim, idx = GATHERS[k]

    def run(L):
        x = L.tensor(np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape), requires_grad=True)
        y = L.gather(x, dim, L.tensor(np.asarray(idx)))
        return (y, *L.autograd.grad((y * 2).sum(), [x], allow_unused=True, materialize_grads=True))

    same(run)


def test_igammac_and_the_in_place_forms_op_db_lists():
    """``igammac`` (``special.gammaincc``), ``igamma_``/``igammac_``, ``conj_physical_`` and ``__rdiv__``."""
    a0, x0 = np.array([0.5, 2.0, 3.5]), np.array([1.0, 0.3, 4.0])

    def run(L):
        a, x = L.tensor(a0), L.tensor(x0, requires_grad=True)
        y = L.igammac(a, x)
        z, w = x.detach().clone(), x.detach().clone()
        z.igamma_(a)
        w.igammac_(a)
        v = a * 1.0
        v.igammac_(x)  # (the gradient of the written tensor flows to x)
        c = L.tensor([1 + 2j, 3 - 1j])
        c.conj_physical_()
        return (y, *L.autograd.grad((y + v).sum(), [x]), z, w, a.igammac(x), c, x.detach().__rdiv__(2.0))

    same(run, rtol=1e-12)


@pytest.mark.parametrize("op", ["mul_", "div_", "xlogy_", "pow_", "atan2_", "hypot_", "igammac_", "lerp_"])
def test_in_place_op_on_a_tensor_without_grad_gives_the_others_gradient(op):
    """``x.op_(w)`` with only ``w`` requiring grad: ``w``'s gradient needs the old ``x``, which the write replaces
    (Ember raised "modified by an in-place operation"; PyTorch keeps the old value)."""
    x0, w0 = np.array([0.5, 2.0, 3.5]), np.array([1.0, 0.3, 4.0])

    def run(L):
        w = L.tensor(w0, requires_grad=True)
        x = L.tensor(x0) * 1.0
        args = (w, 0.3) if op == "lerp_" else (w,)
        getattr(x, op)(*args)
        return (x, *L.autograd.grad((x * x).sum(), [w]))

    same(run, rtol=1e-10)


@pytest.mark.parametrize("fn,kw", [("svd_lowrank", {"q": 3}), ("svd_lowrank", {"q": 4, "M": None}),
                                   ("pca_lowrank", {"q": 3}), ("pca_lowrank", {"q": 3, "center": False})])  # fmt: skip
def test_lowrank_svd_and_pca_match_pytorch_on_low_rank_inputs(fn, kw):
    """On inputs of rank ``q`` PyTorch's random projections are exact: S, U diag(S) V^T (free of the vectors'
    signs) and the gradients of a loss of them match; on others Ember's factors are the exact truncated SVD's."""
    rng = np.random.default_rng(0)
    a0, b0 = rng.standard_normal((2, 6, 3)), rng.standard_normal((2, 5, 3))

    def run(L):
        torch.manual_seed(0)
        a, b = L.tensor(a0, requires_grad=True), L.tensor(b0, requires_grad=True)
        U, S, V = getattr(L, fn)(a @ b.mT, **kw)
        rec = (U[..., :3] * S[..., :3].unsqueeze(-2)) @ V[..., :3].mT
        return (S[..., :3], rec, *L.autograd.grad(S[..., :3].sum() + (rec * rec).sum(), [a, b]))

    same(run, rtol=1e-9, atol=1e-10)
    x = ember.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: getattr(ember, fn)(t, q=2)[1], (x,))  # truncated: exact values
    want = np.linalg.svd(x.detach().numpy() - (x.detach().numpy().mean(0) if fn == "pca_lowrank" else 0))[1][:2]
    np.testing.assert_allclose(getattr(ember, fn)(x, q=2)[1].detach().numpy(), want, rtol=1e-12)


def test_nextafter_refuses_integer_tensors():
    """PyTorch implements nextafter for floating dtypes only (NotImplementedError, a RuntimeError); Ember's NumPy
    kernel gave a float64 result."""
    for L in (ember, torch):
        with pytest.raises(RuntimeError):
            L.nextafter(L.tensor([1, 2, 3]), L.tensor([2, 2, 2]))
    same(lambda L: L.nextafter(L.tensor([1.0, 2.0]), L.tensor([2, 2])))


@pytest.mark.parametrize("sa,sb,dims", [((1, 1, 1), (2, 1, 2), ([0, 1], [2, 0])), ((3, 1), (4, 5), ([1], [0])),
                                        ((3, 4), (1, 5), ([1], [0])), ((2, 3), (3, 2), 1)])  # fmt: skip
def test_tensordot_broadcasts_contracted_dims_of_size_1(sa, sb, dims):
    rng = np.random.default_rng(0)
    a0, b0 = rng.standard_normal(sa), rng.standard_normal(sb)

    def run(L):
        a, b = L.tensor(a0, requires_grad=True), L.tensor(b0, requires_grad=True)
        y = L.tensordot(a, b, dims=dims)
        return (y, *L.autograd.grad((y * y).sum(), [a, b]))

    same(run)
    with pytest.raises(RuntimeError):
        ember.tensordot(ember.ones(3, 2), ember.ones(4, 5), dims=([1], [0]))
