"""PyTorch's top-level names that Ember serves with what it has (``_torch_names.py``,
``nn/functional/_toplevel.py``): each is called the same way under both libraries, and the values (and, for the
functionals, the gradients of every input that requires one) must agree."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember._dtype import as_dtype

torch = pytest.importorskip("torch")

FLOATS = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


def _on_embers_device():
    """PyTorch's default device set to Ember's (``with``, around PyTorch's calls only): make test-cuda runs Ember on
    cuda, so the PyTorch program to compare with makes its tensors there too (its type names read
    ``torch.cuda.FloatTensor`` there, its ``asarray`` of a NumPy array copies)."""
    return torch.device(str(ember.get_default_device()))


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_matches_torch(name):
    e, t = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(e, field) == getattr(t, field), field
    assert e.dtype == t.dtype
    assert ember.finfo().dtype == torch.finfo().dtype == "float32"


@pytest.mark.parametrize("name", [*FLOATS, *INTS, "bool"])
def test_dtype_prints_as_torch(name):
    """str, repr and f-strings of a dtype read ``ember.X`` where PyTorch's read ``torch.X``; code that takes the
    part after the dot (HF's ``str(dtype).split(".")[1]``) gets the same name; ``Tensor.type()`` names alike."""
    e, t = getattr(ember, name), getattr(torch, name)
    assert (str(e), repr(e), f"{e}") == tuple(s.replace("torch.", "ember.") for s in (str(t), repr(t), f"{t}"))
    assert str(e).split(".")[1] == str(t).split(".")[1] == e.name
    assert as_dtype(str(t)) is as_dtype(str(e)) is e
    if name == "bfloat16" and not (be := ember.backends.get_backend()).supports_bfloat16:
        pytest.skip(f"the {be.name} backend has no bfloat16 tensor to name")
    with _on_embers_device():  # ('torch.FloatTensor' on the CPU, 'torch.cuda.FloatTensor' on CUDA)
        want = torch.zeros(1, dtype=t).type().replace("torch.", "ember.")
    assert ember.zeros(1, dtype=e).type() == want


@pytest.mark.parametrize("name", INTS)
def test_iinfo_matches_torch(name):
    e, t = ember.iinfo(getattr(ember, name)), torch.iinfo(getattr(torch, name))
    assert (e.bits, e.min, e.max, e.dtype) == (t.bits, t.min, t.max, t.dtype)


def test_info_refuses_the_other_kind():
    with pytest.raises(TypeError, match="iinfo"):
        ember.finfo(ember.int32)
    with pytest.raises(TypeError, match="finfo"):
        ember.iinfo(ember.float32)
    with pytest.raises(TypeError):
        ember.iinfo(ember.bool)
    with pytest.raises(TypeError):
        torch.iinfo(torch.bool)


def _basics(lib):
    x = lib.tensor(np.array([[1.5, -2.0], [0.0, 3.0]]), requires_grad=True)
    y = x * 2.0
    c, d = lib.clone(y), lib.detach(y)
    return {
        "constants": (lib.e, lib.pi, lib.inf, str(lib.nan), lib.newaxis),
        "size": (list(lib.Size([2, 3, 4])), lib.Size([2, 3, 4]).numel(), lib.Size([2, 3]) == (2, 3)),
        "is_tensor": (lib.is_tensor(x), lib.is_tensor(np.ones(2)), lib.is_tensor(3.0)),
        "numel": (lib.numel(x), lib.numel(lib.ones(0, 3))),
        "clone": (c.tolist(), c.requires_grad, c.grad_fn is not None, c.data_ptr() != y.data_ptr()),
        "detach": (d.tolist(), d.requires_grad, d.data_ptr() == y.data_ptr()),
        "predicates": (
            lib.is_floating_point(x),
            lib.is_floating_point(lib.tensor([1])),
            lib.is_signed(x),
            lib.is_signed(lib.tensor([1], dtype=lib.uint8)),
            lib.is_same_size(x, y),
            lib.is_nonzero(lib.tensor([2.0])),
            lib.is_nonzero(lib.tensor(0)),
        ),
        "typename": lib.typename(x).split(".", 1)[1],
    }


def test_basics_match_torch():
    got = _basics(ember)
    with _on_embers_device():
        want = _basics(torch)
        typename = torch.typename(torch.ones(1)).replace("torch.", "ember.")
    assert got == want
    assert typename == ("ember.FloatTensor" if ember.ones(1).device.type == "cpu" else "ember.cuda.FloatTensor")
    assert ember.typename(ember.ones(1)) == typename and ember.typename(3) == "int"
    with pytest.raises(TypeError, match="numel"):
        ember.numel([1, 2])


R = np.random.RandomState(0)
X4 = R.randn(2, 4, 6, 6)
X3 = R.randn(2, 4, 9)
W2 = R.randn(3, 4, 3, 3)
B3 = R.randn(3)
G4, BETA4 = R.rand(4) + 0.5, R.randn(4)
PROB = R.uniform(0.1, 0.9, (3, 5))


def _t(lib, a, grad=True):
    return lib.tensor(np.array(a), requires_grad=grad)


def _i(lib, a):
    return lib.tensor(np.array(a, dtype=np.int64))


# name -> lib -> positional arguments, as ATen's top-level function takes them
CALLS = {
    "conv2d": lambda m: (_t(m, X4), _t(m, W2), _t(m, B3), 2, 1, 1, 1),
    "conv1d": lambda m: (_t(m, X3), _t(m, R.randn(2, 2, 3)), None, 1, 0, 2, 2),
    "conv_transpose2d": lambda m: (_t(m, X4), _t(m, R.randn(4, 2, 3, 3)), _t(m, R.randn(2)), 2, 1, 1),
    "dropout": lambda m: (_t(m, X3), 0.3, False),
    "alpha_dropout": lambda m: (_t(m, X3), 0.3, False),
    "pixel_shuffle": lambda m: (_t(m, X4), 2),
    "channel_shuffle": lambda m: (_t(m, X4), 2),
    "cosine_similarity": lambda m: (_t(m, X3), _t(m, X3[::-1].copy()), 1),
    "pairwise_distance": lambda m: (_t(m, X3[0]), _t(m, X3[1]), 3.0),
    "pdist": lambda m: (_t(m, X3[0]),),
    "max_pool2d": lambda m: (_t(m, X4), 3, 2, 1),
    "max_pool1d": lambda m: (_t(m, X3), 2),
    "avg_pool1d": lambda m: (_t(m, X3), 3, 2, 1, True, False),
    "adaptive_avg_pool1d": lambda m: (_t(m, X3), 4),
    "adaptive_max_pool1d": lambda m: (_t(m, X3), 4),
    "max_pool1d_with_indices": lambda m: (_t(m, X3), 3, 2),
    "bilinear": lambda m: (_t(m, X3[0, :, :3]), _t(m, X3[1, :, :5]), _t(m, R.randn(2, 3, 5)), _t(m, R.randn(2))),
    "prelu": lambda m: (_t(m, X4), _t(m, np.array([0.2, 0.1, 0.3, 0.4]))),
    "selu": lambda m: (_t(m, X3),),
    "celu": lambda m: (_t(m, X3), 0.7),
    "rrelu": lambda m: (_t(m, X3), 0.1, 0.3, False),
    "threshold": lambda m: (_t(m, X3), 0.2, -1.0),
    "hardshrink": lambda m: (_t(m, X3), 0.6),
    "rms_norm": lambda m: (_t(m, X3), [9], _t(m, R.rand(9) + 0.5), 1e-5),
    "softmax": lambda m: (_t(m, X3), 1, m.float64),
    "log_softmax": lambda m: (_t(m, X3), -1),
    "layer_norm": lambda m: (_t(m, X3), [9], _t(m, R.rand(9)), _t(m, R.randn(9)), 1e-5, True),
    "group_norm": lambda m: (_t(m, X4), 2, _t(m, G4), _t(m, BETA4), 1e-5, True),
    "batch_norm": lambda m: (
        _t(m, X4),
        _t(m, G4),
        _t(m, BETA4),
        _t(m, np.zeros(4), False),
        _t(m, np.ones(4), False),
        True,
        0.1,
        1e-5,
        True,
    ),
    "instance_norm": lambda m: (_t(m, X4), _t(m, G4), _t(m, BETA4), None, None, True, 0.1, 1e-5, True),
    "embedding": lambda m: (_t(m, R.randn(6, 3)), _i(m, [[0, 2], [5, 2]]), 2),
    "constant_pad_nd": lambda m: (_t(m, X3), [1, 2, 0, 1], 0.5),
    "kl_div": lambda m: (_t(m, np.log(PROB)), _t(m, PROB[::-1].copy(), False), 2),
    "binary_cross_entropy_with_logits": lambda m: (
        _t(m, R.randn(3, 5)),
        _t(m, PROB, False),
        _t(m, R.rand(5), False),
        _t(m, R.rand(5) + 0.5, False),
        0,
    ),
    "cosine_embedding_loss": lambda m: (
        _t(m, X3[0]),
        _t(m, X3[1]),
        _t(m, np.array([1.0, -1.0, 1.0, -1.0]), False),
        0.1,
    ),
    "margin_ranking_loss": lambda m: (_t(m, R.randn(5)), _t(m, R.randn(5)), _t(m, np.sign(R.randn(5)), False), 0.2),
    "margin_ranking_loss_mean": lambda m: (
        _t(m, R.randn(5)),
        _t(m, R.randn(5)),
        _t(m, np.sign(R.randn(5)), False),
        0.2,
        1,
    ),
    "kl_div_none": lambda m: (_t(m, np.log(PROB)), _t(m, PROB[::-1].copy(), False)),
    "hinge_embedding_loss": lambda m: (_t(m, R.randn(5)), _t(m, np.sign(R.randn(5)), False), 0.7, 0),
    "poisson_nll_loss": lambda m: (_t(m, R.randn(5)), _t(m, R.rand(5) * 3, False), True, True, 1e-8, 1),
    "triplet_margin_loss": lambda m: (_t(m, X3[0]), _t(m, X3[1]), _t(m, X3[0] * 0.5), 1.0, 2.0, 1e-6, True, 2),
    "ctc_loss": lambda m: (
        _t(m, R.randn(6, 2, 4)),  # logits: log_softmax below (PyTorch's gradient at log_probs is its own)
        _i(m, [[1, 2, 1], [3, 3, 0]]),
        [6, 5],
        [3, 2],
        0,
        1,
        False,
    ),
}


# the inputs handed to the function, from the leaves CALLS makes
PREPARE = {"ctc_loss": lambda a: (a[0].log_softmax(-1), *a[1:])}
# PyTorch's float64 celu derivative goes through a float32 1/alpha (Ember's is the exact one, ~2e-9 away)
TORCH_ROUNDS = {"celu": 1e-7}


def _call(lib, name):
    R.seed(7)
    args = CALLS[name](lib)
    fn = getattr(lib, name.removesuffix("_mean").removesuffix("_none"))
    out = fn(*PREPARE.get(name, lambda a: a)(args))
    outs = out if isinstance(out, tuple) else (out,)
    values = [o.detach().numpy().copy() for o in outs]
    floats = [o for o in outs if o.is_floating_point()]
    sum((o * (1.0 + 0.1 * lib.arange(o.numel(), dtype=lib.float64).reshape(o.shape))).sum() for o in floats).backward()
    grads = [a.grad.numpy().copy() for a in args if getattr(a, "requires_grad", False)]
    return values, grads


@pytest.mark.parametrize("name", sorted(CALLS))
def test_top_level_functional_matches_torch(name):
    (ev, eg), (tv, tg) = _call(ember, name), _call(torch, name)
    assert len(ev) == len(tv) and len(eg) == len(tg)
    for a, b in zip(ev + eg, tv + tg, strict=True):
        np.testing.assert_allclose(a, b, rtol=TORCH_ROUNDS.get(name, 1e-9), atol=1e-11)


def test_integer_reduction_is_checked():
    x = ember.randn(3)
    with pytest.raises(ValueError, match="reduction"):
        ember.hinge_embedding_loss(x, x.sign(), 1.0, 3)
    assert math.isclose(
        ember.kl_div(x, x.exp(), 1).item(), ember.nn.functional.kl_div(x, x.exp(), reduction="mean").item()
    )


def _promotions(lib):
    f32, i32, u8, c64 = (lib.ones(2, dtype=d) for d in (lib.float32, lib.int32, lib.uint8, lib.complex64))
    i64_0, f64_0, b = lib.tensor(3), lib.tensor(1.0, dtype=lib.float64), lib.tensor([True])
    pairs = [(f32, i32), (i32, i64_0), (i32, 2.5), (1, 2.0), (1, 2), (True, False), (b, b), (b, 1), (u8, -1),
             (i32, f64_0), (f32, f64_0), (c64, 1.0), (True, 2), (b, 2.5), (u8, True)]  # fmt: skip
    kinds = (lib.float64, lib.int32, lib.bool, lib.complex64, lib.uint8)
    return (
        [str(lib.result_type(a, c)).split(".")[-1] for a, c in pairs],
        [lib.can_cast(x, y) for x in kinds for y in (lib.float16, lib.int8, lib.bool, lib.complex128)],
        list(lib.broadcast_shapes((2, 1, 3), (4, 1), 3)),
    )


def _creation_and_state(lib):
    x = lib.ones(2, 3)
    lib.fill_(x, 2.5)
    filled = x.tolist()
    v = lib.tensor(1.5, requires_grad=True)
    y = lib.fill(lib.ones(2, 2), v)
    (y * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    a = np.ones(3, dtype=np.float32)
    shared, copied = lib.asarray(a), lib.asarray(a, copy=True)
    a[0] = 5.0
    anomaly = [lib.is_anomaly_enabled()]
    lib.set_anomaly_enabled(True)
    anomaly.append(lib.is_anomaly_enabled())
    lib.set_anomaly_enabled(False)
    return {
        "range": [lib.range(0, 1, 0.25).tolist(), lib.range(1, 4).tolist(), lib.range(5, 1, -1.5).tolist()],
        "range_dtype": str(lib.range(0, 2).dtype).split(".")[-1],
        "scalar_tensor": (str(lib.scalar_tensor(3).dtype).split(".")[-1], lib.scalar_tensor(3, dtype=lib.int64).item()),
        "empty_strided": lib.empty_strided((2, 3), (1, 2)).stride(),
        "fill": (filled, lib.zero_(x).tolist(), lib.fill(x, 7).tolist(), y.tolist(), v.grad.item()),
        "asarray": (shared.tolist(), copied.tolist()),
        "anomaly": anomaly + [lib.is_anomaly_enabled()],
    }


@pytest.mark.filterwarnings("ignore:torch.range is deprecated")
def test_promotion_creation_and_state_functions_match_torch():
    got = _promotions(ember), _creation_and_state(ember)
    with _on_embers_device():  # (asarray of a NumPy array: shares it on the CPU, copies it to CUDA)
        want = _promotions(torch), _creation_and_state(torch)
    assert got[0] == want[0]
    got, want = got[1], want[1]
    if ember.from_numpy(np.ones(1))._backend is not ember.zeros(1)._backend:  # the default device is not the host
        assert want["asarray"] == ([1.0] * 3,) * 2 or torch.device(str(ember.get_default_device())).type == "cpu"
        want["asarray"] = ([1.0] * 3,) * 2  # a copy there (the fake-device run's default is torch's CPU beside it)
    assert got == want
    with pytest.raises(RuntimeError, match="broadcast"):
        ember.broadcast_shapes((2, 3), (4,))


@pytest.mark.filterwarnings("ignore:invalid value")
def test_top_level_in_place_functions_match_torch():
    from ember.nn.functional._toplevel import INPLACE

    extra = {"clamp_": (0.4, 0.8), "clamp_max_": (0.5,), "clamp_min_": (0.5,), "clip_": (0.4, 0.8),
             "threshold_": (0.5, -1.0), "rrelu_": (0.1, 0.3, False)}  # fmt: skip
    for name in INPLACE:
        res = []
        for lib in (torch, ember):
            x = lib.tensor(np.array([0.3, 0.6, 1.9]))
            args = extra.get(name, ())
            if name in ("gcd_", "lcm_"):
                x, args = lib.tensor(np.array([4, 6, 9])), (lib.tensor(np.array([6, 4, 3])),)
            elif name in ("ldexp_", "xlogy_"):
                args = (lib.tensor([1.0, 2.0, 3.0]),)
            elif name == "addmv_":
                args = (lib.ones(3, 2, dtype=lib.float64), lib.tensor([0.5, 2.0], dtype=lib.float64))
            assert getattr(lib, name)(x, *args) is x, name
            res.append(x.detach().numpy())
        np.testing.assert_allclose(res[1], res[0], rtol=1e-12, err_msg=name)
