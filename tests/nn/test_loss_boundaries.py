"""Every loss at its boundary values, against PyTorch (issue 29): probabilities of exactly 0 and 1,
infinite logits, huge and tiny variances, empty batches, ``ignore_index`` everywhere.

Each case runs the same code with ``L`` = ember and ``L`` = torch and compares the values and the
gradients of every float input that requires grad (NaN equal to NaN).
"""

import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
inf, nan = math.inf, math.nan
rng = np.random.default_rng(29)


def f32(*v):
    return np.array(v, dtype=np.float32)


def f64(*v):
    return np.array(v, dtype=np.float64)


def _run(L, fn, args, grad):
    ts = []
    for a, g in zip(args, grad, strict=True):
        t = L.tensor(a.copy())  # on the default device, as the tensors the losses make (make test-cuda: cuda)
        ts.append(t.requires_grad_(True) if g and a.dtype.kind == "f" else t)
    out = fn(L, L.nn.functional, *ts)
    leaves = [t for t in ts if t.requires_grad]
    gs = L.autograd.grad(out.sum(), leaves, allow_unused=True) if leaves else ()
    host = [None if g is None else g.detach().cpu().numpy() for g in gs]
    return out.detach().cpu().numpy(), host, [t.shape for t in leaves]


def _close(a, b, what):
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch {b.shape}"
    np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6, equal_nan=True, err_msg=what)


def same(fn, args, grad=None):
    """Values and gradients of ``fn(L, F, *tensors)`` equal under Ember and PyTorch."""
    grad = grad or [True] * len(args)
    ev, eg, shapes = _run(ember, fn, args, grad)
    tv, tg, _ = _run(torch, fn, args, grad)
    _close(ev, tv, "value")
    for i, (a, b) in enumerate(zip(eg, tg, strict=True)):
        zeros = np.zeros(tuple(shapes[i]))
        _close(zeros if a is None else a, zeros if b is None else b, f"gradient of input {i}")


P = f32(0.0, 1.0, 0.5, 1e-30, 1 - 1e-7)
T = f32(0.0, 1.0, 1.0, 1.0, 0.0)
LOGP = np.log(rng.dirichlet(np.ones(4), 5)).astype(np.float32)
TGT = np.array([0, 3, -100, 2, 1])
LOGITS = rng.standard_normal((5, 4)).astype(np.float32)
WEIGHT = [1.0, 2.0, 0.5, 3.0]
REDUCTIONS = ["mean", "sum", "none"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_at_probabilities_0_and_1(reduction):
    """PyTorch clamps the logs at -100 and divides the gradient by max(x (1 - x), 1e-12): finite, not NaN."""
    same(lambda L, F, x, t: F.binary_cross_entropy(x, t, reduction=reduction), [P, T], [True, False])
    same(lambda L, F, x, t: F.binary_cross_entropy(x, t, weight=L.tensor([1.0, 2, 3, 4, 5]), reduction=reduction),
         [P, T], [True, False])  # fmt: skip
    same(lambda L, F, x, t: F.binary_cross_entropy(x, t, reduction=reduction), [f32(0.2, 0.5), f32(0.3, 1.0)])
    same(lambda L, F, x, t: F.binary_cross_entropy(x, t, reduction=reduction), [f64(0.0, 1.0, 0.5), f64(0.0, 1.0, 0.5)],
         [True, False])  # fmt: skip


def test_binary_cross_entropy_trains_through_saturated_outputs():
    """The siamese-network case: a sigmoid that saturates to exactly 1.0 in float32 must not give NaN weights."""
    for L in (ember, torch):
        w = L.tensor([[40.0, -40.0]], requires_grad=True)
        p = L.sigmoid(L.tensor([[1.0, 0.0], [0.0, 1.0]]) @ w.t()).reshape(-1)  # 1.0 and 4e-18 in float32
        L.nn.functional.binary_cross_entropy(p, L.tensor([0.0, 1.0])).backward()
        assert bool(L.isfinite(w.grad).all()), L.__name__


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_binary_cross_entropy_with_logits_at_infinite_logits_and_pos_weight(reduction):
    x = f32(-inf, inf, 0.0, 50.0, -50.0, 3.0, -3.0)
    for t in (f32(0.0, 1.0, 0.5, 0.0, 1.0, 1.0, 0.0), f32(1.0, 0.0, 0.5, 1.0, 0.0, 0.3, 0.7)):
        same(lambda L, F, x, t: F.binary_cross_entropy_with_logits(x, t, reduction=reduction), [x, t], [True, False])
        for pw in (3.0, 0.0):
            same(lambda L, F, x, t, pw=pw: F.binary_cross_entropy_with_logits(x, t, reduction=reduction,
                 pos_weight=L.tensor(pw)), [x, t], [True, False])  # fmt: skip
    same(lambda L, F, x, t: F.binary_cross_entropy_with_logits(x, t, pos_weight=L.tensor([1.0, 2.0, 0.5]),
         weight=L.tensor([[1.0], [2.0], [3.0], [4.0]])), [rng.standard_normal((4, 3)), rng.random((4, 3))],
         [True, False])  # fmt: skip


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss")  # PyTorch's, for 'mean'
@pytest.mark.parametrize("reduction", [*REDUCTIONS, "batchmean"])
def test_kl_div_at_zero_and_infinite_log_probabilities(reduction):
    same(lambda L, F, x, t: F.kl_div(x, t, reduction=reduction), [f32(-inf, 0.0, -1.0, -100.0, 2.0),
         f32(0.5, 0.0, 1.0, 1e-30, 0.5)], [True, False])  # fmt: skip
    same(lambda L, F, x, t: F.kl_div(x, t, reduction=reduction, log_target=True),
         [f32(-inf, 0.0, -1.0, -100.0, 2.0), f32(-inf, 0.0, -1.0, inf, 2.0)])  # fmt: skip
    same(lambda L, F, x, t: F.kl_div(x, t, reduction=reduction), [f32(0.1, 0.2), f32(-1.0, 0.5)],
         [True, False])  # a negative target: NaN there, as PyTorch (it was silently 0)  # fmt: skip
    same(lambda L, F, x, t: F.kl_div(x, t, reduction=reduction), [rng.standard_normal((3, 4)), rng.random(4)])


@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("full", [False, True])
def test_poisson_nll_loss_at_zero_rates_and_counts(log_input, full):
    x = f32(-inf, 0.0, 1.0, 50.0, 0.5, 2.0) if log_input else f32(0.0, 1e-9, 1.0, 50.0, 0.5, 2.0)
    t = f32(0.0, 1.0, 2.0, 0.0, 1.5, 100.0)
    # (the target's gradient is not compared at target 0 with full=True: PyTorch's is NaN there, from 0 * inf
    # in the masked Stirling term; Ember's is the derivative of the unmasked part)
    same(lambda L, F, x, t: F.poisson_nll_loss(x, t, log_input=log_input, full=full, reduction="none"), [x, t],
         [True, not full])  # fmt: skip
    same(lambda L, F, x, t: F.poisson_nll_loss(x, t, log_input=log_input, full=full), [f32(0.5, 2.0), f32(1.0, 0.5)])


@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll_loss_at_tiny_and_huge_variances(full):
    """The clamp at eps changes the value only: PyTorch's gradient passes it (it clamps under no_grad)."""
    x, t = f32(0.0, 1.0, 2.0), f32(0.5, 0.5, 0.5)
    for var in (f32(1e-12, 1.0, 1e12), f32(0.0, 1.0, inf)):
        same(lambda L, F, x, t, v: F.gaussian_nll_loss(x, t, v, full=full, reduction="none"), [x, t, var])
    same(lambda L, F, x, t, v: F.gaussian_nll_loss(x, t, v, full=full), [f64(0.0, 1e10), f64(1.0, -1e10),
         f64(1e300, 1e-300)])  # fmt: skip


def test_gaussian_nll_loss_var_with_one_dim_less_covers_the_last_dim():
    x, t = rng.standard_normal((2, 3)), np.zeros((2, 3))
    same(lambda L, F, x, t, v: F.gaussian_nll_loss(x, t, v, reduction="none"), [x, t, f64(1.0, 2.0)])
    same(lambda L, F, x, t, v: F.gaussian_nll_loss(x, t, v, reduction="none"), [x, t, f64(1.0, 2.0).reshape(2, 1)])
    same(lambda L, F, x, t, v: F.gaussian_nll_loss(x, t, v), [x, t, rng.random((2, 3)) + 0.1])
    same(lambda L, F, x, t, v: F.gaussian_nll_loss(x, t, v), [rng.standard_normal(3), np.zeros(3), f64(2.0)])
    for L in (ember, torch):
        F = L.nn.functional
        with pytest.raises(ValueError, match="var"):
            F.gaussian_nll_loss(L.zeros(2, 3), L.zeros(2, 3), L.ones(4))
        with pytest.raises(ValueError, match="var has negative"):
            F.gaussian_nll_loss(L.zeros(2, 3), L.zeros(2, 3), -L.ones(2, 3))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_with_ignore_index_everywhere(reduction):
    def nll(**kw):
        return lambda L, F, x, t: F.nll_loss(x, t, reduction=reduction, **kw)

    same(nll(), [LOGP, TGT])
    same(nll(ignore_index=2), [LOGP, TGT.clip(0)])
    same(nll(), [LOGP, np.full(5, -100)])  # every target ignored: NaN mean, zero gradients
    same(lambda L, F, x, t: F.nll_loss(x, t, weight=L.tensor(WEIGHT), reduction=reduction), [LOGP, TGT])
    same(lambda L, F, x, t: F.nll_loss(x, t, weight=L.zeros(4), reduction=reduction), [LOGP, TGT.clip(0)])
    ignored_row_inf = np.where(np.arange(20).reshape(5, 4) == 8, -inf, LOGP).astype(np.float32)  # row 2 is ignored
    same(nll(), [ignored_row_inf, TGT])
    same(nll(), [rng.standard_normal((2, 4, 3)), np.array([[0, -100, 3], [1, 2, -100]])])
    same(nll(), [rng.standard_normal(4), np.array(2)])
    same(nll(), [rng.standard_normal(4), np.array(-100)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.1, 1.0])
def test_cross_entropy_with_label_smoothing_and_ignore_index(reduction, smoothing):
    def ce(**kw):
        return lambda L, F, x, t: F.cross_entropy(x, t, reduction=reduction, label_smoothing=smoothing, **kw)

    def ce_w(**kw):
        return lambda L, F, x, t: F.cross_entropy(x, t, reduction=reduction, label_smoothing=smoothing,
                                                  weight=L.tensor(WEIGHT), **kw)  # fmt: skip

    probs = rng.dirichlet(np.ones(4), 5).astype(np.float32)
    same(ce(), [LOGITS, TGT])
    same(ce_w(), [LOGITS, TGT])
    same(ce(), [LOGITS, np.full(5, -100)])
    same(ce_w(), [LOGITS, np.full(5, -100)])
    same(ce(ignore_index=1), [LOGITS, TGT.clip(0)])
    same(ce(), [LOGITS, probs])
    same(ce_w(), [LOGITS, probs])
    with_inf = np.where(np.arange(20).reshape(5, 4) % 3 == 1, -inf, LOGITS).astype(np.float32)
    same(ce(), [with_inf, TGT.clip(0)])
    same(ce_w(), [np.where(np.arange(20).reshape(5, 4) == 8, -inf, LOGITS).astype(np.float32), TGT])
    same(ce_w(), [rng.standard_normal((2, 4, 3)).astype(np.float32), np.array([[0, -100, 3], [1, 2, -100]])])
    same(ce(), [rng.standard_normal(4), np.array(2)])


@pytest.mark.parametrize("name", ["l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss"])
def test_pointwise_losses_at_infinities_and_empty_batches(name):
    def fn(**kw):
        return lambda L, F, x, t: getattr(F, name)(x, t, **kw)

    # (NaN inputs are left out: PyTorch's fused smooth_l1/huber backward gives NaN there, Ember's gives 0)
    grad_t = name != "soft_margin_loss"  # PyTorch's soft_margin_loss has no target gradient
    same(fn(reduction="none"), [f32(inf, -inf, 0.0, 1.0, 3.0), f32(1.0, 0.0, 0.0, 1.0, -2.0)], [True, grad_t])
    same(fn(), [f32(1.0, 2.0), f32(1.0, 2.0)], [True, grad_t])


def test_losses_at_their_kinks():
    same(lambda L, F, x, t: F.smooth_l1_loss(x, t, beta=0.0), [f32(1.0, 2.0), f32(1.0, 3.0)])
    same(lambda L, F, x, t: F.huber_loss(x, t, delta=1.0), [f32(1.0, 2.0), f32(0.0, 3.0)])
    same(lambda L, F, x, t: F.smooth_l1_loss(x, t, beta=1.0), [f32(1.0, 2.0), f32(0.0, 3.0)])
    same(lambda L, F, a, b, y: F.margin_ranking_loss(a, b, y, margin=0.5), [f32(1.0, 2.0, 0.5), f32(1.5, 2.0, 0.0),
         f32(1.0, -1.0, 1.0)])  # fmt: skip
    same(lambda L, F, a, y: F.hinge_embedding_loss(a, y), [f32(0.3, 1.0, 2.0), f32(1.0, -1.0, -1.0)])
    same(lambda L, F, a, b, y: F.cosine_embedding_loss(a, b, y), [np.zeros((2, 4), np.float32),
         rng.standard_normal((2, 4)).astype(np.float32), f32(1.0, -1.0)])  # fmt: skip
    same(lambda L, F, a, p, n: F.triplet_margin_loss(a, p, n), [np.ones((3, 4), np.float32)] * 3)


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss")  # PyTorch's kl_div warning
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_losses_of_an_empty_batch(reduction):
    """NaN for 'mean' (0 / 0), 0 for 'sum', an empty tensor for 'none', empty gradients: as PyTorch."""
    e2, e1 = np.zeros((0, 4), np.float32), np.zeros(0, np.float32)
    idx = np.zeros(0, np.int64)
    same(lambda L, F, x, t: F.nll_loss(x, t, reduction=reduction), [e2, idx])
    same(lambda L, F, x, t: F.cross_entropy(x, t, reduction=reduction), [e2, idx])
    same(lambda L, F, x, t: F.cross_entropy(x, t, reduction=reduction, label_smoothing=0.1), [e2, idx])
    same(lambda L, F, x, t: F.cross_entropy(x, t, reduction=reduction, weight=L.tensor(WEIGHT)), [e2, idx])
    same(lambda L, F, x, t: F.binary_cross_entropy(x, t, reduction=reduction), [e1, e1], [True, False])
    same(lambda L, F, x, t: F.binary_cross_entropy_with_logits(x, t, reduction=reduction), [e1, e1], [True, False])
    for name in ("l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "kl_div", "poisson_nll_loss"):
        same(lambda L, F, x, t, name=name: getattr(F, name)(x, t, reduction=reduction), [e1, e1], [True, False])
    same(lambda L, F, x, t, v: F.gaussian_nll_loss(x, t, v, reduction=reduction), [e2, e2, e2])
