"""ember.nn.functional against torch.nn.functional: gradcheck in float64, forward/backward parity."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.testing import check_op, torch_or_none

rng = np.random.default_rng(3)


def r(*shape):
    return rng.standard_normal(shape)


def T():
    return __import__("torch")


def TF():
    return __import__("torch").nn.functional


def same(label, name, args, **kw):
    """``F.<name>(*args, **kw)`` on both sides."""
    return (label, lambda *a: getattr(F, name)(*a, **kw), lambda *a: getattr(TF(), name)(*a, **kw), args)


def tup(label, name, args, **kw):
    """Like ``same`` for functions returning tuples."""
    return (label, lambda *a: tuple(getattr(F, name)(*a, **kw)), lambda *a: tuple(getattr(TF(), name)(*a, **kw)), args)


ACTIVATIONS = [
    same("relu6", "relu6", [r(8) * 4]),
    same("leaky_relu", "leaky_relu", [r(8)], negative_slope=0.2),
    same("elu", "elu", [r(8)], alpha=0.7),
    same("selu", "selu", [r(8)]),
    same("celu", "celu", [r(8)], alpha=1.5),
    same("gelu", "gelu", [r(8)]),
    same("gelu_tanh", "gelu", [r(8)], approximate="tanh"),
    same("silu", "silu", [r(8)]),
    same("mish", "mish", [r(8)]),
    same("softplus", "softplus", [r(8)]),
    same("softplus_beta", "softplus", [r(8) * 10], beta=2.0, threshold=5.0),
    same("softsign", "softsign", [r(8)]),
    same("hardtanh", "hardtanh", [r(8)], min_val=-0.5, max_val=0.7),
    same("hardsigmoid", "hardsigmoid", [r(8) * 4]),
    same("hardswish", "hardswish", [r(8) * 4]),
    same("logsigmoid", "logsigmoid", [r(8)]),
    same("hardshrink", "hardshrink", [r(8)]),
    same("softshrink", "softshrink", [r(8)]),
    same("tanhshrink", "tanhshrink", [r(8)]),
    same("glu", "glu", [r(3, 4)]),
    same("prelu", "prelu", [r(2, 3, 4), rng.uniform(0.1, 0.3, 3)]),
    same("prelu_single", "prelu", [r(2, 3), np.array([0.25])]),
]
CONV = [
    same("conv1d", "conv1d", [r(2, 3, 9), r(4, 3, 3), r(4)], stride=2, padding=1),
    same("conv2d", "conv2d", [r(2, 3, 6, 7), r(4, 3, 3, 2), r(4)]),
    same("conv2d_stride_pad_dil", "conv2d", [r(1, 2, 7, 7), r(3, 2, 3, 3)], stride=(2, 1), padding=2, dilation=2),
    same("conv2d_same", "conv2d", [r(1, 2, 5, 6), r(2, 2, 4, 3)], padding="same"),
    same("conv2d_groups", "conv2d", [r(2, 4, 5, 5), r(6, 2, 3, 3)], groups=2),
    same("conv2d_depthwise", "conv2d", [r(2, 3, 5, 5), r(3, 1, 3, 3), r(3)], groups=3, padding=1),
    same("conv_transpose1d", "conv_transpose1d", [r(2, 3, 5), r(3, 2, 3)], stride=2),
    same("conv_transpose2d", "conv_transpose2d", [r(2, 3, 4, 4), r(3, 2, 3, 3), r(2)], stride=2, padding=1,
         output_padding=1),
    same("conv_transpose2d_groups", "conv_transpose2d", [r(1, 4, 3, 3), r(4, 1, 2, 2)], groups=2, dilation=2),
    same("unfold", "unfold", [r(2, 2, 5, 6)], kernel_size=(2, 3), padding=1, stride=2),
    same("fold", "fold", [r(2, 8, 12)], output_size=(4, 5), kernel_size=2),
    same("max_pool1d", "max_pool1d", [r(2, 3, 9)], kernel_size=3, stride=2, padding=1),
    same("max_pool2d", "max_pool2d", [r(2, 2, 6, 7)], kernel_size=2),
    same("max_pool2d_ceil", "max_pool2d", [r(1, 2, 7, 7)], kernel_size=3, stride=2, padding=1, ceil_mode=True),
    same("max_pool2d_dil", "max_pool2d", [r(1, 1, 8, 8)], kernel_size=2, dilation=2),
    tup("max_pool2d_idx", "max_pool2d", [r(1, 2, 5, 5)], kernel_size=2, stride=2, padding=1, return_indices=True),
    same("avg_pool1d", "avg_pool1d", [r(2, 3, 9)], kernel_size=3, stride=2, padding=1),
    same("avg_pool2d", "avg_pool2d", [r(2, 2, 6, 6)], kernel_size=2),
    same("avg_pool2d_pad", "avg_pool2d", [r(1, 2, 7, 7)], kernel_size=3, stride=2, padding=1, ceil_mode=True),
    same("avg_pool2d_nopad", "avg_pool2d", [r(1, 2, 7, 7)], kernel_size=3, stride=2, padding=1, ceil_mode=True,
         count_include_pad=False),
    same("avg_pool2d_divisor", "avg_pool2d", [r(1, 1, 4, 4)], kernel_size=2, divisor_override=3),
    same("adaptive_avg_pool2d", "adaptive_avg_pool2d", [r(2, 3, 6, 6)], output_size=(3, 2)),
    same("adaptive_avg_pool2d_odd", "adaptive_avg_pool2d", [r(2, 3, 7, 5)], output_size=(3, 4)),
    same("adaptive_avg_pool1d", "adaptive_avg_pool1d", [r(2, 3, 7)], output_size=3),
    same("adaptive_max_pool2d", "adaptive_max_pool2d", [r(2, 3, 6, 6)], output_size=2),
    tup("adaptive_max_pool2d_odd", "adaptive_max_pool2d", [r(1, 2, 7, 5)], output_size=(3, 2), return_indices=True),
]  # fmt: skip
NORMS = [
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (4, 5), w, b), lambda x, w, b: TF().layer_norm(x, (4, 5), w, b),
     [r(3, 4, 5), r(4, 5), r(4, 5)]),
    ("layer_norm_plain", lambda x: F.layer_norm(x, 6), lambda x: TF().layer_norm(x, (6,)), [r(3, 6)]),
    ("group_norm", lambda x, w, b: F.group_norm(x, 3, w, b), lambda x, w, b: TF().group_norm(x, 3, w, b),
     [r(2, 6, 3, 2), r(6), r(6)]),
    same("instance_norm", "instance_norm", [r(2, 3, 4, 5)]),
    ("rms_norm", lambda x, w: F.rms_norm(x, (6,), w), lambda x, w: TF().rms_norm(x, (6,), w), [r(3, 6), r(6)]),
    same("normalize", "normalize", [r(3, 4)]),
    same("normalize_p1", "normalize", [r(3, 4)], p=1.0, dim=0),
    same("local_response_norm", "local_response_norm", [r(2, 5, 3, 3)], size=3),
    ("batch_norm_eval", lambda x, w, b: F.batch_norm(x, ember.tensor([0.1, -0.2, 0.3], dtype=x.dtype),
     ember.tensor([1.5, 0.5, 2.0], dtype=x.dtype), w, b),
     lambda x, w, b: TF().batch_norm(x, __import__("torch").tensor([0.1, -0.2, 0.3], dtype=x.dtype),
     __import__("torch").tensor([1.5, 0.5, 2.0], dtype=x.dtype), w, b), [r(4, 3, 2), r(3), r(3)]),
    ("batch_norm_eval_4d_no_affine", lambda x: F.batch_norm(x, ember.tensor([0.1, -0.2], dtype=x.dtype),
     ember.tensor([1.5, 0.5], dtype=x.dtype)),
     lambda x: TF().batch_norm(x, __import__("torch").tensor([0.1, -0.2], dtype=x.dtype),
     __import__("torch").tensor([1.5, 0.5], dtype=x.dtype)), [r(2, 2, 3, 3)]),
    ("batch_norm_train", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     lambda x, w, b: TF().batch_norm(x, None, None, w, b, training=True), [r(4, 3, 2, 2), r(3), r(3)]),
    ("batch_norm_train_weight_only", lambda x, w: F.batch_norm(x, None, None, w, training=True),
     lambda x, w: TF().batch_norm(x, None, None, w, training=True), [r(3, 2, 5), r(2)]),
    ("batch_norm_train_bias_only", lambda x, b: F.batch_norm(x, None, None, None, b, training=True),
     lambda x, b: TF().batch_norm(x, None, None, None, b, training=True), [r(5, 4), r(4)]),
    ("batch_norm_train_no_affine_5d", lambda x: F.batch_norm(x, None, None, training=True),
     lambda x: TF().batch_norm(x, None, None, training=True), [r(2, 3, 2, 2, 3)]),
    ("batch_norm_train_running", lambda x, w, b: F.batch_norm(x, ember.zeros(3, dtype=x.dtype),
        ember.ones(3, dtype=x.dtype), w, b, training=True, momentum=0.3),
     lambda x, w, b: TF().batch_norm(x, T().zeros(3, dtype=x.dtype), T().ones(3, dtype=x.dtype), w, b,
        training=True, momentum=0.3), [r(6, 3, 4) * 3 + 1, r(3), r(3)]),
]  # fmt: skip
MISC = [
    same("linear", "linear", [r(2, 5, 3), r(4, 3), r(4)]),
    same("bilinear", "bilinear", [r(2, 3), r(2, 4), r(5, 3, 4), r(5)]),
    same("embedding", "embedding", [rng.integers(0, 5, (2, 3)), r(5, 4)]),
    same("interp_nearest", "interpolate", [r(1, 2, 3, 4)], scale_factor=2),
    same("interp_nearest_size", "interpolate", [r(1, 2, 5, 4)], size=(3, 7)),
    same("interp_nearest_exact", "interpolate", [r(1, 2, 5, 4)], size=(3, 7), mode="nearest-exact"),
    same("interp_bilinear", "interpolate", [r(1, 2, 3, 4)], size=(5, 7), mode="bilinear"),
    same("interp_bilinear_ac", "interpolate", [r(1, 2, 3, 4)], size=(5, 7), mode="bilinear", align_corners=True),
    same("interp_bilinear_down", "interpolate", [r(1, 2, 6, 8)], scale_factor=0.5, mode="bilinear"),
    same("interp_linear", "interpolate", [r(2, 3, 4)], scale_factor=2.5, mode="linear"),
    same("interp_area", "interpolate", [r(1, 2, 6, 5)], size=(3, 2), mode="area"),
    same("pixel_shuffle", "pixel_shuffle", [r(2, 8, 3, 2)], upscale_factor=2),
    same("pixel_unshuffle", "pixel_unshuffle", [r(2, 2, 4, 6)], downscale_factor=2),
    same("sdpa", "scaled_dot_product_attention", [r(2, 3, 4, 5), r(2, 3, 6, 5), r(2, 3, 6, 2)]),
    same("sdpa_causal", "scaled_dot_product_attention", [r(1, 2, 4, 3), r(1, 2, 4, 3), r(1, 2, 4, 3)], is_causal=True),
    same("sdpa_float_mask", "scaled_dot_product_attention", [r(2, 3, 5), r(2, 4, 5), r(2, 4, 3), r(3, 4)]),
    same("sdpa_bool_mask", "scaled_dot_product_attention", [r(2, 3, 5), r(2, 4, 5), r(2, 4, 3),
         np.array([[True, False, True, True], [True, True, False, False], [False, True, True, True]])]),
    same("cosine_similarity", "cosine_similarity", [r(3, 4), r(3, 4)]),
    same("pairwise_distance", "pairwise_distance", [r(3, 4), r(3, 4)]),
    same("pad_reflect", "pad", [r(2, 3, 5)], pad=(2, 1), mode="reflect"),
]  # fmt: skip
PROBS = rng.uniform(0.05, 0.95, (4, 3))
W43, PW, W5, Y5 = rng.uniform(0.5, 2, (4, 3)), rng.uniform(0.5, 2, 3), rng.uniform(0.5, 2, 5), [1.0, -1, 1, -1, 1]
LOSSES = [
    same("bce", "binary_cross_entropy", [PROBS, rng.uniform(0, 1, (4, 3))]),
    ("bce_weight_sum", lambda p, t: F.binary_cross_entropy(p, t, ember.tensor(W43, dtype=p.dtype), reduction="sum"),
     lambda p, t: TF().binary_cross_entropy(p, t, T().tensor(W43, dtype=p.dtype), reduction="sum"),
     [PROBS, rng.uniform(0, 1, (4, 3))]),
    same("bce_logits", "binary_cross_entropy_with_logits", [r(4, 3), rng.uniform(0, 1, (4, 3))]),
    ("bce_logits_pos",
     lambda x, t: F.binary_cross_entropy_with_logits(x, t, pos_weight=ember.tensor(PW, dtype=x.dtype)),
     lambda x, t: TF().binary_cross_entropy_with_logits(x, t, pos_weight=T().tensor(PW, dtype=x.dtype)),
     [r(4, 3), rng.uniform(0, 1, (4, 3))]),
    same("l1", "l1_loss", [r(4, 3), r(4, 3)]),
    same("smooth_l1", "smooth_l1_loss", [r(4, 3), r(4, 3)], beta=0.5),
    same("huber", "huber_loss", [r(4, 3) * 2, r(4, 3)], delta=0.7, reduction="sum"),
    same("kl_div", "kl_div", [r(4, 3), rng.uniform(0, 1, (4, 3))], reduction="batchmean"),
    same("kl_div_log", "kl_div", [r(4, 3), r(4, 3)], log_target=True, reduction="sum"),
    same("cosine_embedding", "cosine_embedding_loss", [r(4, 3), r(4, 3), np.array([1, -1, 1, -1])], margin=0.1),
    same("margin_ranking", "margin_ranking_loss", [r(5), r(5), np.array([1, -1, 1, -1, 1])], margin=0.2),
    same("hinge_embedding", "hinge_embedding_loss", [r(5), np.array([1, -1, 1, -1, 1])]),
    ("soft_margin", lambda x: F.soft_margin_loss(x, ember.tensor(Y5, dtype=x.dtype)),
     lambda x: TF().soft_margin_loss(x, T().tensor(Y5, dtype=x.dtype)), [r(5)]),
    same("triplet", "triplet_margin_loss", [r(4, 3), r(4, 3), r(4, 3)]),
    same("poisson_nll", "poisson_nll_loss", [r(4, 3), rng.poisson(2, (4, 3)).astype(float)]),
    same("gaussian_nll", "gaussian_nll_loss", [r(4, 3), r(4, 3), rng.uniform(0.5, 2, (4, 3))]),
    same("ce_probs_smooth", "cross_entropy", [r(4, 5), rng.dirichlet(np.ones(5), 4)], label_smoothing=0.1),
    ("ce_weight_ignore", lambda x, t: F.cross_entropy(x, t, ember.tensor(W5, dtype=x.dtype)),
     lambda x, t: TF().cross_entropy(x, t, T().tensor(W5, dtype=x.dtype)), [r(4, 5), np.array([0, 4, -100, 1])]),
    same("ce_smooth", "cross_entropy", [r(4, 5), np.array([0, 4, 2, 1])], label_smoothing=0.2),
    same("ce_spatial", "cross_entropy", [r(2, 5, 3), rng.integers(0, 5, (2, 3))]),
    same("nll_sum", "nll_loss", [r(4, 5), np.array([0, 4, 2, 1])], reduction="sum"),
]  # fmt: skip
CASES = ACTIVATIONS + CONV + NORMS + MISC + LOSSES
# PyTorch computes these float64 results through a float32 constant (hardsigmoid_backward's 1/6): Ember's are the
# exact ones, ~3e-8 away
TORCH_ROUNDS = {"hardsigmoid": 1e-7}


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's note about even kernels
@pytest.mark.parametrize("name,fn,tfn,args", CASES, ids=[c[0] for c in CASES])
def test_functional(name, fn, tfn, args):
    check_op(fn, *args, torch_fn=tfn, name=name, rtol=TORCH_ROUNDS.get(name))


@pytest.mark.parametrize(
    "name", ["conv2d", "max_pool2d", "layer_norm", "gelu", "batch_norm", "batch_norm_affine", "batch_norm_eval"]
)
def test_second_order(name):
    cases = {
        "conv2d": (lambda x, w: F.conv2d(x, w, stride=2, padding=1), [r(1, 2, 4, 4), r(2, 2, 3, 3)]),
        "max_pool2d": (lambda x: F.max_pool2d(x, 2), [r(1, 1, 4, 4)]),
        "layer_norm": (lambda x: F.layer_norm(x, (4,)), [r(2, 4)]),
        "gelu": (lambda x: F.gelu(x), [r(4)]),
        "batch_norm": (lambda x: F.batch_norm(x, None, None, training=True), [r(3, 2)]),
        "batch_norm_affine": (
            lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
            [r(3, 2, 2), r(2), r(2)],
        ),
        "batch_norm_eval": (
            lambda x, w, b: F.batch_norm(
                x, ember.tensor([0.1, -0.2], dtype=x.dtype), ember.tensor([1.5, 0.5], dtype=x.dtype), w, b
            ),
            [r(2, 2, 3), r(2), r(2)],
        ),
    }
    fn, args = cases[name]
    check_op(fn, *args, second_order=True, name=name)


def test_batch_norm_updates_running_stats_in_place():
    x = ember.tensor(r(8, 3, 2, 2), dtype=ember.float32)
    rm, rv = ember.zeros(3), ember.ones(3)
    F.batch_norm(x, rm, rv, training=True, momentum=0.1)
    xs = x.numpy().transpose(1, 0, 2, 3).reshape(3, -1)
    np.testing.assert_allclose(rm.numpy(), 0.1 * xs.mean(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), 0.9 + 0.1 * xs.var(1, ddof=1), rtol=1e-5)
    y = F.batch_norm(x, rm, rv, training=False)
    np.testing.assert_allclose(y.numpy()[:, 0], (x.numpy()[:, 0] - rm.numpy()[0]) / np.sqrt(rv.numpy()[0] + 1e-5),
                               rtol=1e-5)  # fmt: skip


def test_batch_norm_train_float32_conv_sized_matches_pytorch(torch):
    # the fused training kernel at a ResNet layer's size, float32, forward and all three gradients
    x0, w0, b0 = r(8, 16, 12, 12) * 2 + 1, r(16), r(16)
    g0 = r(8, 16, 12, 12)
    outs = []
    for lib in (ember, torch):
        x, w, b = (lib.tensor(a, dtype=lib.float32, requires_grad=True) for a in (x0, w0, b0))
        rm, rv = lib.zeros(16), lib.ones(16)
        y = lib.nn.functional.batch_norm(x, rm, rv, w, b, training=True)
        y.backward(lib.tensor(g0, dtype=lib.float32))
        outs.append([np.array(t.tolist()) for t in (y, x.grad, w.grad, b.grad, rm, rv)])
    for e, t in zip(*outs, strict=True):
        np.testing.assert_allclose(e, t, rtol=2e-4, atol=2e-5)


def test_batch_norm_train_in_place_rules_and_anomaly_mode():
    x = ember.tensor(r(4, 3, 2), requires_grad=True)
    w, b = ember.tensor(r(3), requires_grad=True), ember.tensor(r(3), requires_grad=True)
    h = x * 1.0
    y = F.batch_norm(h, None, None, w, b, training=True)
    with ember.no_grad():
        b.add_(1.0)  # the bias's value is not needed for any gradient: no error (as in PyTorch)
    with ember.autograd.detect_anomaly():  # the Tensor path of the node's backward
        (ga,) = ember.autograd.grad((y * y).sum(), [x], retain_graph=True)
    (gf,) = ember.autograd.grad((y * y).sum(), [x], retain_graph=True)
    np.testing.assert_allclose(ga.numpy(), gf.numpy(), rtol=1e-12)
    h.mul_(2.0)  # the input's value is needed
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


def test_dropout_is_seeded_inverted_and_off_in_eval():
    x = ember.ones(1000)
    ember.manual_seed(0)
    a = F.dropout(x, 0.3)
    ember.manual_seed(0)
    b = F.dropout(x, 0.3)
    assert a.tolist() == b.tolist()
    kept = a.numpy() != 0
    assert 0.6 < kept.mean() < 0.8
    np.testing.assert_allclose(a.numpy()[kept], 1 / 0.7, rtol=1e-6)
    assert F.dropout(x, 0.3, training=False) is x
    w = ember.ones(4, 5, requires_grad=True)
    F.dropout2d(w.reshape(1, 4, 5, 1), 0.5).sum().backward()
    g = w.grad.numpy()
    assert all(len(set(row)) == 1 for row in g)  # whole channels dropped together


def test_stable_for_large_inputs():
    x = ember.tensor([-1e4, -50.0, 0.0, 50.0, 1e4], requires_grad=True)
    for fn in (F.softplus, F.logsigmoid, F.silu, F.gelu, F.mish, F.elu, ember.sigmoid):
        y = fn(x)
        assert np.isfinite(y.detach().numpy()).all(), fn.__name__
        (g,) = ember.autograd.grad(y.sum(), [x])
        assert np.isfinite(g.numpy()).all(), fn.__name__
    t = ember.tensor([0.0, 1.0, 1.0, 0.0, 1.0])
    loss = F.binary_cross_entropy_with_logits(x, t)
    assert np.isfinite(loss.item())
    logits = ember.tensor([[1e4, -1e4, 0.0]], requires_grad=True)
    assert np.isfinite(F.cross_entropy(logits, ember.tensor([1])).item())


def test_embedding_padding_row_gets_no_gradient():
    w = ember.randn(4, 3, requires_grad=True)
    F.embedding(ember.tensor([0, 1, 1, 3]), w, padding_idx=1).sum().backward()
    assert w.grad.numpy()[1].tolist() == [0.0, 0.0, 0.0]
    assert w.grad.numpy()[0].tolist() == [1.0, 1.0, 1.0]


def test_errors_name_the_problem():
    x = ember.zeros(2, 3, 5, 5)
    with pytest.raises(ValueError, match=r"conv2d: input has 3 channels but weight \(4, 2, 3, 3\) expects 2"):
        F.conv2d(x, ember.zeros(4, 2, 3, 3))
    with pytest.raises(ValueError, match="conv2d: kernel"):
        F.conv2d(x, ember.zeros(1, 3, 7, 7))
    with pytest.raises(ValueError, match="max_pool2d: padding"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match="layer_norm: normalized_shape"):
        F.layer_norm(x, (4,))
    with pytest.raises(ValueError, match="batch_norm: running_mean has shape"):
        F.batch_norm(x, ember.zeros(4), ember.ones(3))
    with pytest.raises(IndexError, match="embedding: index 9 is out of range for 4"):
        F.embedding(ember.tensor([9]), ember.zeros(4, 2))
    with pytest.raises(ValueError, match="dropout: p must be in"):
        F.dropout(x, 1.5)
    if ember.zeros(1)._backend.host_checks:  # a value check; on torch's CUDA it would wait for the device
        with pytest.raises(ValueError, match="binary_cross_entropy: input must hold probabilities"):
            F.binary_cross_entropy(ember.tensor([1.5]), ember.tensor([1.0]))
    else:  # no check: the loss is NaN, never a plausible number
        assert F.binary_cross_entropy(ember.tensor([1.5]), ember.tensor([1.0])).isnan().item()
    with pytest.raises(ValueError, match="interpolate: mode 'bilinear' needs a 4-d input"):
        F.interpolate(ember.zeros(1, 2, 3), scale_factor=2, mode="bilinear")
    with pytest.raises(ValueError, match="group_norm: 3 channels"):
        F.group_norm(x, 2)


@pytest.mark.skipif(torch_or_none() is None, reason="torch not installed")
def test_all_functional_names_exist_in_torch():
    missing = [n for n in F.__all__ if not hasattr(TF(), n)]
    if tuple(int(p) for p in torch_or_none().__version__.split(".")[:2]) < (2, 13):
        missing = [n for n in missing if n not in _SINCE_2_13]  # an older torch than the pinned one
    assert missing == []


_SINCE_2_13 = {"linear_cross_entropy"}  # in torch 2.13 (pinned), not in 2.11
