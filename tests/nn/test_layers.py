"""Every layer against torch.nn with the same weights: outputs, input and parameter gradients, train and eval."""

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.testing import torch_or_none

torch = torch_or_none()
pytestmark = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(5)


def r(*shape):
    return rng.standard_normal(shape)


def layer(name, args=(), kwargs=None, shape=(2, 3), extra=None, inputs=None):
    return (name, args, kwargs or {}, shape, extra, inputs)


LAYERS = [
    layer("Linear", (3, 4)),
    layer("Linear", (3, 4), {"bias": False}),
    layer("Bilinear", (3, 2, 4), inputs=lambda: [r(5, 3), r(5, 2)]),
    layer("Identity"),
    layer("Flatten", shape=(2, 3, 4)),
    layer("Unflatten", (1, (2, 3)), shape=(4, 6)),
    layer("Conv1d", (3, 4, 3), {"padding": 1, "stride": 2}, shape=(2, 3, 9)),
    layer("Conv2d", (3, 4, 3), {"padding": "same", "dilation": 2}, shape=(2, 3, 7, 7)),
    layer("Conv2d", (4, 4, 3), {"groups": 2, "padding_mode": "reflect", "padding": 1}, shape=(2, 4, 5, 5)),
    layer("ConvTranspose2d", (3, 2, 3), {"stride": 2, "output_padding": 1}, shape=(2, 3, 4, 4)),
    layer("BatchNorm1d", (3,), shape=(6, 3)),
    layer("BatchNorm2d", (3,), shape=(4, 3, 2, 2)),
    layer("BatchNorm2d", (3,), {"momentum": None}, shape=(4, 3, 2, 2)),
    layer("LayerNorm", ((3, 4),), shape=(2, 3, 4)),
    layer("GroupNorm", (2, 4), shape=(2, 4, 3)),
    layer("RMSNorm", (4,), shape=(3, 4)),
    layer("InstanceNorm2d", (3,), {"affine": True}, shape=(2, 3, 4, 4)),
    layer("Embedding", (6, 3), {"padding_idx": 0}, inputs=lambda: [rng.integers(0, 6, (2, 5))]),
    *[layer(a) for a in ["ReLU", "ReLU6", "SiLU", "Mish", "Sigmoid", "Tanh", "Hardswish", "Hardsigmoid", "GELU",
                         "SELU", "Softsign", "LogSigmoid"]],
    layer("LeakyReLU", (0.2,)),
    layer("ELU", (0.5,)),
    layer("Softplus", (2.0,)),
    layer("PReLU", (3,)),
    layer("Softmax", (1,)),
    layer("LogSoftmax", (1,)),
    layer("MaxPool1d", (2,), shape=(2, 3, 8)),
    layer("MaxPool2d", (3, 2, 1), shape=(2, 3, 7, 7)),
    layer("AvgPool1d", (3, 2), shape=(2, 3, 8)),
    layer("AvgPool2d", (2,), shape=(2, 3, 6, 6)),
    layer("AdaptiveAvgPool2d", ((1, 1),), shape=(2, 3, 5, 5)),
    layer("AdaptiveMaxPool2d", (2,), shape=(2, 3, 5, 5)),
    layer("Upsample", (), {"scale_factor": 2, "mode": "bilinear"}, shape=(1, 2, 3, 3)),
    layer("PixelShuffle", (2,), shape=(1, 8, 2, 2)),
    layer("ZeroPad2d", ((1, 2, 0, 1),), shape=(1, 2, 3, 3)),
    layer("Dropout", (0.5,)),
    layer("Dropout2d", (0.5,), shape=(2, 3, 4, 4)),
    layer("RNN", (3, 4, 2), {"nonlinearity": "relu"}, shape=(5, 2, 3)),
    layer("LSTM", (3, 4, 2), {"bidirectional": True, "batch_first": True}, shape=(2, 5, 3)),
    layer("GRU", (3, 4), {"bidirectional": True}, shape=(5, 2, 3)),
    layer("MultiheadAttention", (8, 2), {"batch_first": True}, inputs=lambda: [r(2, 5, 8), r(2, 4, 8), r(2, 4, 8)]),
    layer("TransformerEncoderLayer", (8, 2, 16, 0.0), {"batch_first": True}, shape=(2, 5, 8)),
    layer("TransformerEncoderLayer", (8, 2, 16, 0.0), {"norm_first": True, "activation": "gelu"}, shape=(5, 2, 8)),
    layer("TransformerDecoderLayer", (8, 2, 16, 0.0), {"batch_first": True}, inputs=lambda: [r(2, 4, 8), r(2, 6, 8)]),
]  # fmt: skip


def _first(out):
    while isinstance(out, tuple):
        out = out[0]
    return out


def _run(name, args, kwargs, shape, inputs, train):
    t_layer = getattr(torch.nn, name)(*args, **kwargs).double()
    e_layer = getattr(nn, name)(*args, **kwargs, **({"dtype": ember.float64} if _takes_dtype(name) else {}))
    e_layer.to(ember.float64)
    missing = e_layer.load_state_dict({k: v.detach().numpy() for k, v in t_layer.state_dict().items()})
    assert missing == ([], [])
    t_layer.train(train)
    e_layer.train(train)
    xs = inputs() if inputs else [r(*shape)]
    t_in = [torch.tensor(x, requires_grad=x.dtype.kind == "f") for x in xs]
    e_in = [ember.tensor(x, requires_grad=x.dtype.kind == "f") for x in xs]
    if name in ("Dropout", "Dropout2d"):  # random masks differ from torch's: check their properties instead
        _check_dropout(e_layer, e_in[0], train, channels=name == "Dropout2d")
        _check_dropout(t_layer, t_in[0], train, channels=name == "Dropout2d")
        return e_layer
    t_out, e_out = _first(t_layer(*t_in)), _first(e_layer(*e_in))
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-6, atol=1e-8, err_msg=name)
    w = r(*t_out.shape)
    (t_out * torch.tensor(w)).sum().backward()
    (e_out * ember.tensor(w)).sum().backward()
    for t, e in zip(t_in, e_in, strict=True):
        if t.grad is not None:
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-8, err_msg=f"{name} input")
    t_params = dict(t_layer.named_parameters())
    for k, p in e_layer.named_parameters():
        tg = t_params[k].grad
        eg = p.grad
        if tg is None:
            assert eg is None or not np.any(eg.numpy()), f"{name}.{k}"
            continue
        np.testing.assert_allclose(eg.numpy(), tg.numpy(), rtol=1e-6, atol=1e-8, err_msg=f"{name}.{k} grad")
    for k, b in t_layer.named_buffers():
        np.testing.assert_allclose(e_layer.state_dict()[k].numpy(), b.numpy(), rtol=1e-6, err_msg=f"{name}.{k}")
    return e_layer


def _check_dropout(layer, x, train, channels):
    """Eval: the input unchanged. Train: each element (channel for Dropout2d) zeroed or scaled by 1/(1-p),
    the gradient through the same mask."""
    out = layer(x)
    xv, ov = x.detach().numpy(), out.detach().numpy()
    if not train:
        np.testing.assert_array_equal(ov, xv)
        return
    p = layer.p
    kept = ov != 0
    np.testing.assert_allclose(ov[kept], xv[kept] / (1 - p), rtol=1e-12)
    if channels:  # whole (sample, channel) maps are dropped together
        per_map = kept.reshape(*kept.shape[:2], -1)
        assert (per_map.all(-1) | ~per_map.any(-1)).all()
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / (1 - p), rtol=1e-12)


def _takes_dtype(name):
    import inspect

    return "dtype" in inspect.signature(getattr(nn, name).__init__).parameters


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize(
    "name,args,kwargs,shape,extra,inputs", LAYERS, ids=[f"{c[0]}-{i}" for i, c in enumerate(LAYERS)]
)
def test_layer_matches_torch(name, args, kwargs, shape, extra, inputs, train):
    _run(name, args, kwargs, shape, inputs, train)


def test_parameter_names_and_shapes_match_torch():
    for name, args, kwargs, *_ in LAYERS:
        t = getattr(torch.nn, name)(*args, **kwargs)
        e = getattr(nn, name)(*args, **kwargs)
        assert {k: tuple(v.shape) for k, v in t.state_dict().items()} == {
            k: v.shape for k, v in e.state_dict().items()
        }, name


def test_default_init_follows_torch():
    # PyTorch's Linear: weight and bias uniform in +-1/sqrt(fan_in)
    ember.manual_seed(0)
    e = nn.Linear(400, 300)
    bound = 1 / 400**0.5
    w, b = e.weight.detach().numpy(), e.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / 3**0.5) < 0.01 * bound
    assert np.abs(b).max() <= bound and b.std() > 0.4 * bound
    ember.manual_seed(0)
    again = nn.Linear(400, 300)
    assert np.array_equal(again.weight.detach().numpy(), w)  # reproducible under manual_seed


@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_dropout_mask_statistics_scaling_and_eval(p):
    n = 40_000
    d = nn.Dropout(p)
    x = ember.ones(n)
    y = d(x).numpy()
    dropped = (y == 0).mean()
    assert abs(dropped - p) < 4 * (p * (1 - p) / n) ** 0.5  # within 4 standard deviations of p
    np.testing.assert_allclose(y[y != 0], 1 / (1 - p), rtol=1e-6)
    assert abs(y.mean() - 1) < 0.05  # the scaling keeps the expectation
    d.eval()
    assert d(x) is x


def test_dropout2d_drops_whole_channels_with_rate_p():
    d = nn.Dropout2d(0.3)
    y = d(ember.ones(50, 40, 3, 3)).numpy().reshape(2000, 9)
    zero_maps = (y == 0).all(1)
    assert ((y == 0).any(1) == zero_maps).all()  # a map is dropped entirely or not at all
    assert abs(zero_maps.mean() - 0.3) < 4 * (0.3 * 0.7 / 2000) ** 0.5
    np.testing.assert_allclose(y[~zero_maps], 1 / 0.7, rtol=1e-6)


@pytest.mark.parametrize("name", ["Dropout", "Dropout2d"])
def test_dropout_is_reproducible_under_manual_seed(name):
    d = getattr(nn, name)(0.5)
    x = ember.ones(4, 8, 5, 5)
    ember.manual_seed(3)
    a = d(x).numpy()
    ember.manual_seed(3)
    b = d(x).numpy()
    c = d(x).numpy()  # the generator moved on: a new mask
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_dropout_edge_rates(p):
    x = ember.tensor(np.arange(1.0, 7.0), requires_grad=True)
    y = nn.Dropout(p)(x)
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy() if p == 0 else np.zeros(6))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(6, 1.0 - p))
