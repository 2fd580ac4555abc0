"""Autocast against torch.autocast("cpu", torch.bfloat16): per listed op the output dtype is PyTorch's and the
values agree within bfloat16's tolerance (torch backend); float16 on NumPy; state, nesting, caching, errors."""

import numpy as np
import pytest

import ember
from ember import backends

rng = np.random.default_rng(0)


def _a(*shape, positive=False):
    x = rng.standard_normal(shape).astype(np.float32)
    return np.abs(x) + 0.5 if positive else x


A, B = _a(4, 5), _a(5, 3)
BA, BB = _a(2, 4, 5), _a(2, 5, 3)
IMG, W2 = _a(2, 3, 6, 6), _a(4, 3, 3, 3)
SEQ = _a(2, 3, 5, 4)  # (batch, heads, length, dim)
LOGITS, TARGET = _a(6, 5), np.array([0, 3, 1, 4, 2, 0])
POS = _a(6, 5, positive=True)

# name -> fn(lib, t) where t(array) makes a float32 tensor of that library; lower() makes a lower-precision input
CASES = {
    "matmul": lambda L, t: L.matmul(t(A), t(B)),
    "mm": lambda L, t: L.mm(t(A), t(B)),
    "bmm": lambda L, t: L.bmm(t(BA), t(BB)),
    "addmm": lambda L, t: L.addmm(t(A[:, :3]), t(A), t(B)),
    "baddbmm": lambda L, t: L.baddbmm(t(BA[:, :, :3]), t(BA), t(BB)),
    "linear": lambda L, t: L.nn.functional.linear(t(A), t(B.T), t(B[0])),
    "conv1d": lambda L, t: L.nn.functional.conv1d(t(IMG[:, :, 0]), t(W2[:, :, 0])),
    "conv2d": lambda L, t: L.nn.functional.conv2d(t(IMG), t(W2), t(W2[:, 0, 0, 0]), padding=1),
    "conv_transpose2d": lambda L, t: L.nn.functional.conv_transpose2d(t(IMG), t(W2.transpose(1, 0, 2, 3))),
    "sdpa": lambda L, t: L.nn.functional.scaled_dot_product_attention(t(SEQ), t(SEQ), t(SEQ), is_causal=True),
    "prelu": lambda L, t: L.nn.functional.prelu(t(A), t(np.array([0.25], np.float32))),
    "softmax": lambda L, t: L.nn.functional.softmax(t(A), -1),
    "log_softmax": lambda L, t: L.nn.functional.log_softmax(t(A), -1),
    "softmax_of_lower": lambda L, t: L.nn.functional.softmax(L.matmul(t(A), t(B)), -1),
    "cross_entropy": lambda L, t: L.nn.functional.cross_entropy(t(LOGITS), L.tensor(TARGET)),
    "cross_entropy_of_lower": lambda L, t: L.nn.functional.cross_entropy(
        L.matmul(t(LOGITS), t(_EYE5)), L.tensor(TARGET)
    ),
    "nll_loss": lambda L, t: L.nn.functional.nll_loss(L.matmul(t(LOGITS), t(_EYE5)), L.tensor(TARGET)),
    "mse_loss": lambda L, t: L.nn.functional.mse_loss(L.matmul(t(A), t(B)), t(A[:, :3])),
    "l1_loss": lambda L, t: L.nn.functional.l1_loss(L.matmul(t(A), t(B)), t(A[:, :3])),
    "smooth_l1_loss": lambda L, t: L.nn.functional.smooth_l1_loss(L.matmul(t(A), t(B)), t(A[:, :3])),
    "huber_loss": lambda L, t: L.nn.functional.huber_loss(L.matmul(t(A), t(B)), t(A[:, :3])),
    "kl_div": lambda L, t: L.nn.functional.kl_div(t(LOGITS), t(POS), reduction="batchmean"),
    "bce_with_logits": lambda L, t: L.nn.functional.binary_cross_entropy_with_logits(
        L.matmul(t(A), t(B)), t((A[:, :3] > 0).astype(np.float32))
    ),
    "layer_norm": lambda L, t: L.nn.functional.layer_norm(t(A), (5,), t(A[0]), t(A[1])),
    "layer_norm_of_lower": lambda L, t: L.nn.functional.layer_norm(L.matmul(t(A), t(B)), (3,)),
    "group_norm": lambda L, t: L.nn.functional.group_norm(t(IMG), 3),
    "exp": lambda L, t: L.exp(L.matmul(t(A), t(B))),
    "log": lambda L, t: L.log(t(POS)),
    "pow": lambda L, t: L.pow(L.matmul(t(A), t(B)), 2.0),
    "sum": lambda L, t: L.matmul(t(A), t(B)).sum(),
    "mean": lambda L, t: L.matmul(t(A), t(B)).mean(0),
    "cumsum": lambda L, t: L.cumsum(L.matmul(t(A), t(B)), 0),
    "cat": lambda L, t: L.cat([L.matmul(t(A), t(B)), t(A[:, :3])], 0),
    "stack": lambda L, t: L.stack([L.matmul(t(A), t(B)), t(A[:, :3])]),
    "where": lambda L, t: L.where(t(A[:, :3]) > 0, L.matmul(t(A), t(B)), t(A[:, :3])),
    "add_across_types": lambda L, t: L.matmul(t(A), t(B)) + t(A[:, :3]),
    "mul_lower_by_scalar": lambda L, t: L.matmul(t(A), t(B)) * 3.0,
    "relu_gelu": lambda L, t: L.nn.functional.gelu(L.relu(L.matmul(t(A), t(B)))),
}
_EYE5 = np.eye(5, dtype=np.float32)


@pytest.fixture(params=["torch", "numpy"])
def on_cpu_backend(request):
    """torch's or NumPy's CPU backend (bfloat16 on NumPy: ml_dtypes, each op computing in float32)."""
    pytest.importorskip("torch")
    with backends.use(request.param), ember.device(backends.get(request.param).device):
        yield


@pytest.fixture
def on_torch():
    """torch on the CPU: these tests are about CPU autocast, whatever the default device (EMBER_DEVICE=cuda)."""
    pytest.importorskip("torch")
    with backends.use("torch"), ember.device("cpu"):
        yield


@pytest.mark.parametrize("name", list(CASES))
def test_dtype_and_values_follow_torch_cpu_bfloat16(name, on_cpu_backend, torch):
    case = CASES[name]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = case(torch, torch.tensor)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        got = case(ember, ember.tensor)
    assert got.dtype.name == str(expected.dtype).removeprefix("torch."), name
    tol = 2e-2 if expected.dtype == torch.bfloat16 else 1e-2  # bfloat16 keeps 8 bits of mantissa
    np.testing.assert_allclose(got.float().numpy(), expected.float().numpy(), rtol=tol, atol=tol * 4, err_msg=name)


def test_gradients_come_back_in_each_parameters_dtype(on_cpu_backend, torch):
    model = ember.nn.Sequential(ember.nn.Linear(5, 8), ember.nn.ReLU(), ember.nn.Linear(8, 3))
    with ember.autocast("cpu"):
        out = model(ember.tensor(A))
        assert out.dtype is ember.bfloat16
        loss = ember.nn.functional.cross_entropy(out, ember.tensor([0, 1, 2, 0]))
        assert loss.dtype is ember.float32
    loss.backward()
    assert {p.grad.dtype for p in model.parameters()} == {ember.float32}


def test_float16_and_bfloat16_autocast_run_on_numpy():
    numpy_cpu = backends.get("numpy").device
    x = ember.tensor(A, device=numpy_cpu, requires_grad=True)
    w = ember.tensor(B, device=numpy_cpu, requires_grad=True)
    with ember.device(numpy_cpu), ember.autocast("cpu", dtype=ember.float16):
        y = x @ w
        loss = ember.nn.functional.mse_loss(y, ember.zeros(4, 3))
    assert y.dtype is ember.float16 and loss.dtype is ember.float32
    loss.backward()
    assert x.grad.dtype is ember.float32 and w.grad.dtype is ember.float32
    np.testing.assert_allclose(y.float().detach().numpy(), A @ B, rtol=2e-3, atol=2e-3)
    with ember.device(numpy_cpu), ember.autocast("cpu"):  # bfloat16 by default, as torch.autocast("cpu")
        y = x @ w
    assert y.dtype is ember.bfloat16 and y._backend.name == "numpy"


def test_state_nesting_and_disabling(on_torch):
    assert not ember.is_autocast_enabled("cpu") and ember.amp.autocast_state() == (None, None, False)
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled()  # no argument: cuda
        assert ember.get_autocast_dtype("cpu") is ember.bfloat16
        state = ember.amp.autocast_state()
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert (ember.tensor(A) @ ember.tensor(B)).dtype is ember.float32
        with ember.cpu.amp.autocast(dtype=ember.float16):
            assert ember.get_autocast_dtype("cpu") is ember.float16
        assert ember.amp.autocast_state() == state
    assert not ember.is_autocast_enabled("cpu")

    @ember.autocast("cpu")
    def f(a, b):
        return a @ b

    assert f(ember.tensor(A), ember.tensor(B)).dtype is ember.bfloat16


def test_parameter_casts_are_cached_per_region(on_torch):
    lin = ember.nn.Linear(5, 3)
    with ember.autocast("cpu"):
        a, b = lin(ember.tensor(A)), lin(ember.tensor(A))
        assert a._creator.inputs[1] is b._creator.inputs[1]  # one bfloat16 copy of the weight
    with ember.autocast("cpu", cache_enabled=False):
        a, b = lin(ember.tensor(A)), lin(ember.tensor(A))
        assert a._creator.inputs[1] is not b._creator.inputs[1]


def test_float64_is_never_cast_and_backward_is_not_autocast(on_torch):
    x = ember.tensor(A.astype(np.float64), requires_grad=True)
    with ember.autocast("cpu"):
        y = (x @ ember.tensor(B.astype(np.float64))).exp()
        assert y.dtype is ember.float64
        y.sum().backward()  # inside the block: the backward pass still runs in forward's dtypes
    assert x.grad.dtype is ember.float64


def test_bad_arguments_are_refused_clearly():
    with pytest.raises(ValueError, match="device_type must be 'cuda' or 'cpu'"):
        ember.autocast("tpu")
    with pytest.raises(TypeError, match=r"float16 or ember\.bfloat16, got ember\.float64"):
        ember.autocast("cpu", dtype=ember.float64)
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match=r"autocast\('cuda'\): no CUDA device.*autocast\('cpu'\)"):
            ember.cuda.amp.autocast().__enter__()
    with ember.autocast("cuda", enabled=False):  # disabled: fine anywhere
        pass
