"""Every public ``torch.nn`` module class exists in ``ember.nn`` with PyTorch's constructor signature and
state-dict keys (names and shapes), checked by constructing both with the same arguments."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
tnn = torch.nn

#: classes another issue owns (distributed training)
ELSEWHERE = {"SyncBatchNorm"}

NAMES = sorted(n for n in dir(tnn) if not n.startswith("_") and isinstance(getattr(tnn, n), type)
               and issubclass(getattr(tnn, n), tnn.Module) and n not in ELSEWHERE)  # fmt: skip

#: constructor arguments for the state-dict comparison (classes not listed take none)
ARGS: dict[str, tuple[tuple, dict]] = {
    "AdaptiveAvgPool1d": ((2,), {}), "AdaptiveAvgPool2d": ((2,), {}), "AdaptiveAvgPool3d": ((2,), {}),
    "AdaptiveMaxPool1d": ((2,), {}), "AdaptiveMaxPool2d": ((2,), {}), "AdaptiveMaxPool3d": ((2,), {}),
    "AdaptiveLogSoftmaxWithLoss": ((8, 10, [3, 6]), {}), "AvgPool1d": ((2,), {}), "AvgPool2d": ((2,), {}),
    "AvgPool3d": ((2,), {}), "BatchNorm1d": ((4,), {}), "BatchNorm2d": ((4,), {}), "BatchNorm3d": ((4,), {}),
    "Bilinear": ((3, 4, 5), {}), "ChannelShuffle": ((2,), {}), "ConstantPad1d": ((1, 0.5), {}),
    "ConstantPad2d": ((1, 0.5), {}), "ConstantPad3d": ((1, 0.5), {}), "Conv1d": ((4, 6, 3), {}),
    "Conv2d": ((4, 6, 3), {"groups": 2}), "Conv3d": ((4, 6, 3), {}), "ConvTranspose1d": ((4, 6, 3), {}),
    "ConvTranspose2d": ((4, 6, 3), {"groups": 2}), "ConvTranspose3d": ((4, 6, 3), {}), "CrossMapLRN2d": ((3,), {}),
    "Embedding": ((10, 4), {"padding_idx": 0}), "EmbeddingBag": ((10, 4), {}), "Fold": ((4, 2), {}),
    "FractionalMaxPool2d": ((2,), {"output_size": 3}), "FractionalMaxPool3d": ((2,), {"output_size": 3}),
    "GRU": ((4, 5), {"num_layers": 2, "bidirectional": True}), "GRUCell": ((4, 5), {}),
    "GroupNorm": ((2, 4), {}), "InstanceNorm1d": ((4,), {"affine": True, "track_running_stats": True}),
    "InstanceNorm2d": ((4,), {"affine": True}), "InstanceNorm3d": ((4,), {"track_running_stats": True}),
    "LPPool1d": ((2, 3), {}), "LPPool2d": ((2, 3), {}), "LPPool3d": ((2, 3), {}), "LSTM": ((4, 5), {"proj_size": 2}),
    "LSTMCell": ((4, 5), {}), "LayerNorm": ((4,), {}), "LazyBatchNorm1d": ((), {}), "LazyBatchNorm2d": ((), {}),
    "LazyBatchNorm3d": ((), {}), "LazyConv1d": ((4, 3), {}), "LazyConv2d": ((4, 3), {}), "LazyConv3d": ((4, 3), {}),
    "LazyConvTranspose1d": ((4, 3), {}), "LazyConvTranspose2d": ((4, 3), {}), "LazyConvTranspose3d": ((4, 3), {}),
    "LazyInstanceNorm1d": ((), {}), "LazyInstanceNorm2d": ((), {}), "LazyInstanceNorm3d": ((), {}),
    "LazyLinear": ((3,), {}), "Linear": ((4, 3), {}), "LocalResponseNorm": ((3,), {}),
    "MaxPool1d": ((2,), {}), "MaxPool2d": ((2,), {}), "MaxPool3d": ((2,), {}), "MaxUnpool1d": ((2,), {}),
    "MaxUnpool2d": ((2,), {}), "MaxUnpool3d": ((2,), {}), "MultiheadAttention": ((8, 2), {"add_bias_kv": True}),
    "PReLU": ((3,), {}), "PixelShuffle": ((2,), {}), "PixelUnshuffle": ((2,), {}), "RMSNorm": ((4,), {}),
    "RNN": ((4, 5), {"nonlinearity": "relu"}), "RNNCell": ((4, 5), {}), "RNNBase": (("LSTM", 4, 5), {}),
    "RNNCellBase": ((4, 5, True, 4), {}), "LinearCrossEntropyLoss": ((8, 5), {"out_features": (3,), "bias": True}),
    "ReflectionPad1d": ((1,), {}),
    "ReflectionPad2d": ((1,), {}), "ReflectionPad3d": ((1,), {}), "ReplicationPad1d": ((1,), {}),
    "ReplicationPad2d": ((1,), {}), "ReplicationPad3d": ((1,), {}), "CircularPad1d": ((1,), {}),
    "CircularPad2d": ((1,), {}), "CircularPad3d": ((1,), {}), "Threshold": ((0.1, 20.0), {}),
    "Transformer": ((), {"d_model": 8, "nhead": 2, "num_encoder_layers": 1, "num_decoder_layers": 1,
                         "dim_feedforward": 16}),
    "TransformerDecoderLayer": ((8, 2, 16), {}), "TransformerEncoderLayer": ((8, 2, 16), {}),
    "Unflatten": ((1, (2, 2)), {}), "Unfold": ((2,), {}), "ZeroPad1d": ((1,), {}), "ZeroPad2d": ((1,), {}),
    "ZeroPad3d": ((1,), {}), "Upsample": ((), {"scale_factor": 2}), "UpsamplingNearest2d": ((), {"scale_factor": 2}),
    "UpsamplingBilinear2d": ((), {"scale_factor": 2}),
}  # fmt: skip

#: an input for the lazy modules' first call
LAZY_INPUT = {"Linear": (2, 5), "Conv1d": (2, 3, 8), "Conv2d": (2, 3, 8, 8), "Conv3d": (2, 3, 6, 6, 6),
              "ConvTranspose1d": (2, 3, 8), "ConvTranspose2d": (2, 3, 8, 8), "ConvTranspose3d": (2, 3, 4, 4, 4),
              "BatchNorm1d": (4, 3), "BatchNorm2d": (2, 3, 4, 4), "BatchNorm3d": (2, 3, 2, 2, 2),
              "InstanceNorm1d": (2, 3, 4), "InstanceNorm2d": (2, 3, 4, 4),
              "InstanceNorm3d": (2, 3, 2, 2, 2)}  # fmt: skip

#: PyTorch's recurrent layers take ``*args, **kwargs``; these are the parameters their docs (and parser) define
RNN_PARAMS = {
    "RNN": ["input_size", "hidden_size", "num_layers", "nonlinearity", "bias", "batch_first", "dropout",
            "bidirectional", "device", "dtype"],
    "LSTM": ["input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional", "proj_size",
             "device", "dtype"],
    "GRU": ["input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional", "device",
            "dtype"],
}  # fmt: skip


#: the torch that Ember's signatures follow (pyproject's pin); another installed torch is compared loosely
PINNED = (2, 13)
TORCH_VERSION = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


def _params(cls: type) -> list[tuple[str, object, object]]:
    out = []
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        d = p.default
        if callable(d) and not isinstance(d, type):
            d = f"<function {d.__name__}>"
        out.append((p.name, p.kind, d))
    return out


def test_every_torch_nn_module_class_exists():
    missing = [n for n in NAMES if not hasattr(ember.nn, n)]
    assert not missing, f"ember.nn lacks {missing}"
    assert len(NAMES) >= 160


@pytest.mark.parametrize("name", NAMES)
def test_constructor_signature_matches_torch(name):
    tcls, ecls = getattr(tnn, name), getattr(ember.nn, name)
    if name in RNN_PARAMS:
        assert [p[0] for p in _params(ecls)] == RNN_PARAMS[name]
        return
    if tcls.__init__ is tnn.Module.__init__:  # no arguments of its own
        assert all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                   for p in list(inspect.signature(ecls.__init__).parameters.values())[1:]), name  # fmt: skip
        return
    mine, theirs = _params(ecls), _params(tcls)
    if TORCH_VERSION < PINNED:  # e.g. the norm layers' keyword-only ``bias`` came in 2.13: code for this older
        names = {p[0] for p in theirs}  # torch calls Ember the same way if Ember's extras are optional keywords
        extra = [p for p in mine if p[0] not in names]
        assert all(p[1] is inspect.Parameter.KEYWORD_ONLY and p[2] is not inspect.Parameter.empty for p in extra), extra
        mine = [p for p in mine if p[0] in names]
    assert mine == theirs


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_keys_and_shapes_match_torch(name):
    if name in ("Module", "Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
                "TransformerEncoder", "TransformerDecoder", "DataParallel"):  # fmt: skip
        pytest.skip("a container (tested with its contents elsewhere) or a class taking modules")
    args, kw = ARGS.get(name, ((), {}))
    with warnings.catch_warnings():  # PyTorch's deprecation notices (NLLLoss2d)
        warnings.simplefilter("ignore", FutureWarning)
        t = getattr(tnn, name)(*args, **kw)
    e = getattr(ember.nn, name)(*args, **kw)
    if name.startswith("Lazy"):
        x = np.random.default_rng(0).standard_normal(LAZY_INPUT[name[4:]]).astype(np.float32)
        t(torch.tensor(x))
        e(ember.tensor(x))
        assert type(e).__name__ == type(t).__name__
    ts, es = t.state_dict(), e.state_dict()
    assert list(es) == list(ts)
    assert [tuple(v.shape) for v in es.values()] == [tuple(v.shape) for v in ts.values()]


def _ints(*shape, high=5):
    return np.random.default_rng(1).integers(0, high, shape)


#: module name -> (constructor args, kwargs, inputs) for a forward comparison in eval mode with the same weights
FORWARD = {
    "Threshold": ((0.1, 20.0), {}, [(3, 4)]), "Hardshrink": ((), {}, [(3, 4)]), "Softshrink": ((0.3,), {}, [(3, 4)]),
    "Tanhshrink": ((), {}, [(3, 4)]), "RReLU": ((), {}, [(3, 4)]), "Softmax2d": ((), {}, [(2, 3, 4, 4)]),
    "Softmax": ((), {}, [(2, 3, 4)]), "LocalResponseNorm": ((3,), {}, [(2, 5, 4, 4)]),
    "CrossMapLRN2d": ((3,), {"k": 2}, [(2, 5, 4, 4)]), "InstanceNorm3d": ((3,), {"affine": True}, [(2, 3, 2, 3, 3)]),
    "LPPool1d": ((2, 3), {}, [(2, 3, 8)]), "LPPool2d": ((3, 2), {"stride": 1}, [(2, 3, 5, 5)]),
    "LPPool3d": ((2, 2), {}, [(1, 2, 4, 4, 4)]), "Fold": ((4, 2), {}, [(2, 8, 9)]),
    "Unfold": ((2,), {}, [(2, 3, 4, 4)]),
    "ChannelShuffle": ((2,), {}, [(2, 4, 3, 3)]), "UpsamplingNearest2d": ((), {"scale_factor": 2}, [(1, 2, 3, 3)]),
    "UpsamplingBilinear2d": ((), {"size": (5, 4)}, [(1, 2, 3, 3)]), "CosineSimilarity": ((), {}, [(3, 4), (3, 4)]),
    "PairwiseDistance": ((1.0,), {}, [(3, 4), (3, 4)]), "ZeroPad1d": (((1, 2),), {}, [(2, 3, 4)]),
    "ConstantPad3d": ((1, 0.5), {}, [(1, 2, 2, 2, 2)]), "ReflectionPad1d": ((2,), {}, [(2, 3, 5)]),
    "ReflectionPad3d": ((1,), {}, [(1, 2, 3, 3, 3)]), "ReplicationPad1d": ((2,), {}, [(2, 3, 4)]),
    "ReplicationPad3d": ((1,), {}, [(1, 2, 2, 2, 2)]), "CircularPad2d": ((1,), {}, [(1, 2, 3, 3)]),
    "ZeroPad3d": ((1,), {}, [(1, 1, 2, 2, 2)]),
    "MultiheadAttention": ((4, 2), {"kdim": 3, "vdim": 5, "add_bias_kv": True, "add_zero_attn": True,
                                    "batch_first": True}, [(2, 3, 4), (2, 6, 3), (2, 6, 5)]),
    "LSTM": ((4, 5), {"proj_size": 3, "num_layers": 2, "bidirectional": True}, [(6, 2, 4)]),
    "EmbeddingBag": ((10, 3), {"mode": "max"}, [_ints(2, 4, high=10)]),
    "Embedding": ((10, 3), {"padding_idx": 1, "max_norm": 1.0}, [_ints(2, 4, high=10)]),
    "AvgPool2d": ((3,), {"stride": 2, "padding": 1, "divisor_override": 2}, [(1, 2, 6, 6)]),
    "HingeEmbeddingLoss": ((), {"margin": 0.5}, [(3, 4), np.sign(np.random.default_rng(2).standard_normal((3, 4)))]),
    "SoftMarginLoss": ((), {}, [(3, 4), np.sign(np.random.default_rng(3).standard_normal((3, 4)))]),
    "MultiMarginLoss": ((), {"margin": 0.5}, [(4, 5), _ints(4)]),
    "MultiLabelMarginLoss": ((), {}, [(2, 5), _ints(2, 5)]),
    "MultiLabelSoftMarginLoss": ((), {}, [(2, 5), (_ints(2, 5, high=2)).astype(float)]),
    "TripletMarginLoss": ((), {"swap": True}, [(3, 4), (3, 4), (3, 4)]),
    "TripletMarginWithDistanceLoss": ((), {"margin": 2.0}, [(3, 4), (3, 4), (3, 4)]),
    "GaussianNLLLoss": ((), {"full": True}, [(3, 4), (3, 4), np.ones((3, 4)) * 0.5]),
    "PoissonNLLLoss": ((), {"full": True}, [(3, 4), np.abs(np.random.default_rng(4).standard_normal((3, 4))) * 3]),
    "CTCLoss": ((), {"reduction": "sum"}, [np.log(np.full((6, 2, 4), 0.25)), _ints(2, 3, high=3) + 1, [6, 5], [3, 2]]),
    "NLLLoss2d": ((), {}, [(2, 3, 2, 2), _ints(2, 2, 2, high=3)]),
    "Transformer": ((), {"d_model": 8, "nhead": 2, "num_encoder_layers": 1, "num_decoder_layers": 1,
                         "dim_feedforward": 16, "dropout": 0.0}, [(5, 2, 8), (3, 2, 8)]),
}  # fmt: skip


@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore:enable_nested_tensor", "ignore:Implicit dimension")
@pytest.mark.parametrize("name", sorted(FORWARD))
def test_forward_matches_torch_with_the_same_weights(name):
    args, kw, inputs = FORWARD[name]
    t, e = getattr(tnn, name)(*args, **kw).eval(), getattr(ember.nn, name)(*args, **kw).eval()
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s).astype(np.float32) if isinstance(s, tuple) else s for s in inputs]
    t_in = [torch.tensor(x.astype(np.float32) if x.dtype.kind == "f" else x) if isinstance(x, np.ndarray) else x
            for x in xs]  # fmt: skip
    e_in = [ember.tensor(x.astype(np.float32) if x.dtype.kind == "f" else x) if isinstance(x, np.ndarray) else x
            for x in xs]  # fmt: skip
    ref, out = t(*t_in), e(*e_in)
    ref = ref if isinstance(ref, tuple) else (ref,)
    out = out if isinstance(out, tuple) else (out,)
    flat_ref = [v for r in ref for v in (r if isinstance(r, tuple) else (r,))]
    flat_out = [v for o in out for v in (o if isinstance(o, tuple) else (o,))]
    assert len(flat_out) == len(flat_ref)
    for o, r in zip(flat_out, flat_ref, strict=True):
        np.testing.assert_allclose(o.detach().numpy(), r.detach().numpy(), rtol=1e-4, atol=1e-5)
