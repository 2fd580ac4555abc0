"""The functional operators added for the PyTorch surface (issue 30): float64 gradcheck, then forward and backward
parity with torch.nn.functional in float32 and float64 (``check_op``)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.testing import check_op, torch_or_none

rng = np.random.default_rng(30)


def r(*shape):
    return rng.standard_normal(shape)


def TF():
    return __import__("torch").nn.functional


def T():
    return __import__("torch")


def same(label, name, args, **kw):
    return (label, lambda *a: getattr(F, name)(*a, **kw), lambda *a: getattr(TF(), name)(*a, **kw), args)


def _samples(lib, x, values=None):
    """The pooling draws as a constant in ``x``'s dtype (PyTorch computes the window starts in that precision)."""
    return lib.tensor(SAMPLES if values is None else values, dtype=x.dtype)


def _grid_sample(fn, mode, padding_mode, align_corners):
    return lambda x, g: fn(x, g, mode, padding_mode, align_corners)


IDX = np.array([3, 0, 4, 1])
W5 = np.abs(r(5))
TGT_ML = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 1, 1, 1, 1], [4, 4, -1, 0, 0]])
SAMPLES = rng.uniform(0, 1, (2, 3, 2))
SAMPLES3 = rng.uniform(0, 1, (1, 2, 3))
BAG_IDX, BAG_OFF = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0]), np.array([0, 4, 4, 7])
CTC_T = np.array([[1, 2, 2, 0], [3, 3, 1, 4], [1, 1, 1, 1]])
GRID = rng.uniform(-1.2, 1.2, (2, 4, 3, 2))
ASYMMETRIC = r(5, 6)  # a grid-sampling input without equal neighbours (so finite differences see no ties)

CASES = [
    same("lp_pool1d", "lp_pool1d", [np.abs(r(2, 3, 9)) + 0.1], norm_type=2.0, kernel_size=3, stride=2),
    same("lp_pool2d", "lp_pool2d", [np.abs(r(2, 2, 6, 7)) + 0.1], norm_type=3.0, kernel_size=(2, 3), ceil_mode=True),
    same("lp_pool3d", "lp_pool3d", [np.abs(r(1, 2, 4, 4, 4)) + 0.1], norm_type=1.5, kernel_size=2),
    ("fractional_max_pool2d", lambda x: F.fractional_max_pool2d(x, 2, (4, 3), _random_samples=_samples(ember, x)),
     lambda x: TF().fractional_max_pool2d(x, 2, (4, 3), _random_samples=_samples(T(), x)), [r(2, 3, 9, 8)]),
    ("fractional_max_pool3d", lambda x: F.fractional_max_pool3d(x, (2, 2, 1), (3, 2, 4), _random_samples=_samples(
        ember, x, SAMPLES3)), lambda x: TF().fractional_max_pool3d(x, (2, 2, 1), (3, 2, 4), _random_samples=_samples(
            T(), x, SAMPLES3)), [r(1, 2, 6, 5, 7)]),
    same("channel_shuffle", "channel_shuffle", [r(2, 6, 3, 2)], groups=3),
    same("interpolate_bicubic", "interpolate", [r(2, 2, 5, 6)], size=(7, 4), mode="bicubic"),
    same("interpolate_bicubic_ac", "interpolate", [r(1, 2, 4, 5)], scale_factor=1.5, mode="bicubic",
         align_corners=True),
    same("upsample_nearest", "upsample_nearest", [r(1, 2, 3, 4)], scale_factor=2),
    same("upsample_bilinear", "upsample_bilinear", [r(1, 2, 3, 4)], size=(5, 7)),
    same("pdist", "pdist", [r(5, 3)]),
    same("pdist_p1", "pdist", [r(4, 3)], p=1.0),
    ("affine_grid", lambda th: F.affine_grid(th, (2, 3, 4, 5), False),
     lambda th: TF().affine_grid(th, (2, 3, 4, 5), False), [r(2, 2, 3)]),
    ("affine_grid_3d", lambda th: F.affine_grid(th, (1, 2, 3, 4, 5), True),
     lambda th: TF().affine_grid(th, (1, 2, 3, 4, 5), True), [r(1, 3, 4)]),
    *[(f"grid_sample_{m}_{p}_{ac}", _grid_sample(F.grid_sample, m, p, ac),
       _grid_sample(lambda *a: TF().grid_sample(*a), m, p, ac),
       [ASYMMETRIC.reshape(1, 1, 5, 6).repeat(2, 0).repeat(2, 1) + r(2, 2, 5, 6) * 0.1, GRID])
      for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection") for ac in (False, True)],
    ("embedding_bag_mean", lambda w: F.embedding_bag(ember.tensor(BAG_IDX), w, ember.tensor(BAG_OFF), padding_idx=2),
     lambda w: TF().embedding_bag(T().tensor(BAG_IDX), w, T().tensor(BAG_OFF), padding_idx=2), [r(10, 3)]),
    ("embedding_bag_sum_weights", lambda w, p: F.embedding_bag(ember.tensor(BAG_IDX.reshape(2, 5)), w, mode="sum",
                                                               per_sample_weights=p),
     lambda w, p: TF().embedding_bag(T().tensor(BAG_IDX.reshape(2, 5)), w, mode="sum", per_sample_weights=p),
     [r(10, 3), r(2, 5)]),
    ("embedding_bag_max", lambda w: F.embedding_bag(ember.tensor(BAG_IDX), w, ember.tensor(np.r_[BAG_OFF, 10]),
                                                    mode="max", include_last_offset=True),
     lambda w: TF().embedding_bag(T().tensor(BAG_IDX), w, T().tensor(np.r_[BAG_OFF, 10]), mode="max",
                                  include_last_offset=True), [r(10, 3)]),
    ("multi_margin_loss", lambda x: F.multi_margin_loss(x, ember.tensor(IDX), 2, 0.7, ember.tensor(W5, dtype=x.dtype)),
     lambda x: TF().multi_margin_loss(x, T().tensor(IDX), 2, 0.7, T().tensor(W5, dtype=x.dtype)), [r(4, 5)]),
    ("multi_margin_loss_1d", lambda x: F.multi_margin_loss(x, ember.tensor(2)),
     lambda x: TF().multi_margin_loss(x, T().tensor(2)), [r(5)]),
    ("multilabel_margin_loss", lambda x: F.multilabel_margin_loss(x, ember.tensor(TGT_ML), reduction="none"),
     lambda x: TF().multilabel_margin_loss(x, T().tensor(TGT_ML), reduction="none"), [r(4, 5)]),
    same("multilabel_soft_margin_loss", "multilabel_soft_margin_loss", [r(4, 5), (r(4, 5) > 0).astype(float),
                                                                        np.abs(r(5))]),
    same("triplet_margin_with_distance_loss", "triplet_margin_with_distance_loss", [r(4, 3), r(4, 3), r(4, 3)],
         swap=True, margin=0.5),
    ("ctc_loss", lambda z: F.ctc_loss(F.log_softmax(z, 2), ember.tensor(CTC_T), [7, 6, 4], [3, 2, 4],
                                      zero_infinity=True),
     lambda z: TF().ctc_loss(TF().log_softmax(z, 2), T().tensor(CTC_T), [7, 6, 4], [3, 2, 4], zero_infinity=True),
     [r(7, 3, 5)]),
    ("ctc_loss_sum_concatenated", lambda z: F.ctc_loss(F.log_softmax(z, 2), ember.tensor(np.array([1, 2, 3, 3, 1])),
                                                       [6, 5], [3, 2], blank=4, reduction="sum"),
     lambda z: TF().ctc_loss(TF().log_softmax(z, 2), T().tensor(np.array([1, 2, 3, 3, 1])), [6, 5], [3, 2], blank=4,
                             reduction="sum"), [r(6, 2, 5)]),
    ("linear_cross_entropy", lambda x, w, b: F.linear_cross_entropy(x, w, ember.tensor(IDX[:3]), linear_bias=b),
     lambda x, w, b: TF().linear_cross_entropy(x, w, T().tensor(IDX[:3]), linear_bias=b), [r(3, 4), r(5, 4), r(5)]),
    ("multi_head_attention_forward",
     lambda q, k, v, w, b, bk, bv, ow: F.multi_head_attention_forward(q, k, v, 4, 2, w, b, bk, bv, True, 0.0, ow, None,
                                                                     need_weights=True)[0],
     lambda q, k, v, w, b, bk, bv, ow: TF().multi_head_attention_forward(q, k, v, 4, 2, w, b, bk, bv, True, 0.0, ow,
                                                                        None, need_weights=True)[0],
     [r(3, 2, 4), r(5, 2, 4), r(5, 2, 4), r(12, 4), r(12), r(1, 1, 4), r(1, 1, 4), r(4, 4)]),
]  # fmt: skip


@pytest.mark.filterwarnings("ignore:`nn.functional.upsample")  # both libraries call the old names deprecated
@pytest.mark.parametrize("name,fn,tfn,args", CASES, ids=[c[0] for c in CASES])
def test_functional_surface(name, fn, tfn, args):
    if name == "linear_cross_entropy" and torch_or_none() is not None and not hasattr(TF(), name):  # torch < 2.13
        pytest.skip(f"the installed torch has no nn.functional.{name} to compare with")
    check_op(fn, *args, torch_fn=tfn, name=name)


def test_in_place_activations_write_their_input():
    for name, kw in [
        ("relu_", {}),
        ("elu_", {"alpha": 0.5}),
        ("leaky_relu_", {"negative_slope": 0.2}),
        ("hardtanh_", {}),
        ("celu_", {}),
        ("selu_", {}),
        ("threshold_", {"threshold": 0.1, "value": 3.0}),
    ]:
        x = ember.tensor(r(6))
        expected = getattr(F, name[:-1])(ember.tensor(x.numpy()), **kw).tolist()
        out = getattr(F, name)(x, **kw)
        assert out is x and x.tolist() == expected


def test_gumbel_softmax_samples_the_simplex():
    ember.manual_seed(0)
    soft = F.gumbel_softmax(ember.tensor(r(64, 5)), tau=0.5)
    assert np.allclose(soft.sum(-1).numpy(), 1.0) and (soft.numpy() >= 0).all()
    logits = ember.tensor(r(3, 5), requires_grad=True)
    hard = F.gumbel_softmax(logits, hard=True)
    assert set(np.unique(hard.detach().numpy())) <= {0.0, 1.0} and np.allclose(hard.detach().numpy().sum(-1), 1)
    hard.sum().backward()  # straight-through: the soft sample's gradient
    assert logits.grad is not None


def test_feature_alpha_dropout_drops_whole_channels():
    ember.manual_seed(1)
    x = ember.ones(4, 8, 3, 3)
    y = F.feature_alpha_dropout(x, 0.5, training=True).numpy()
    per_channel = y.reshape(4, 8, 9)
    assert (per_channel == per_channel[..., :1]).all() and len(np.unique(per_channel)) == 2
    assert F.feature_alpha_dropout(x, 0.5, training=False) is x


@pytest.mark.skipif(torch_or_none() is None, reason="torch not installed")
def test_every_public_torch_functional_exists():
    torch = torch_or_none()
    internal = {"Optional", "boolean_dispatch", "handle_torch_function", "has_torch_function", "assert_int_or_pair",
                "has_torch_function_unary", "has_torch_function_variadic", "conv_tbc", "grouped_mm",
                "scaled_grouped_mm", "scaled_mm"}  # fmt: skip  # TorchScript plumbing and CUDA-only fused kernels
    names = [n for n in dir(torch.nn.functional) if not n.startswith("_") and callable(getattr(torch.nn.functional, n))
             and not isinstance(getattr(torch.nn.functional, n), type)]  # fmt: skip
    assert not [n for n in names if n not in internal and not hasattr(F, n)]
