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
    if name == "Dropout" or name == "Dropout2d":  # compare the masks' effect on both sides through eval only
        return None
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


def test_dropout_train_and_eval():
    d = nn.Dropout(0.5)
    x = ember.ones(1000)
    assert (d(x).numpy() == 0).mean() > 0.3
    d.eval()
    assert d(x) is x
