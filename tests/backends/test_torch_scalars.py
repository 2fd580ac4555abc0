"""The torch backend's per-op shortcuts (issue 28): Python numbers kept as 0-d tensors (``torch/_xp_scalars.py``)
give torch's own results bit for bit, and tanh/sigmoid (sigmoid's forward too) are torch's one-kernel functions
(PyTorch's bits)."""

import math
import operator
import random
from collections import Counter

import numpy as np
import pytest

import ember
from ember import backends

torch = pytest.importorskip("torch")
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from ember.backends.torch import _xp_scalars as S  # noqa: E402
from ember.backends.torch import xp  # noqa: E402

_rng = random.Random(0)
VALUES = [0.5, 1.0, 2.0, 0.1, 1 / 3, -2.5, 1e-3, 3e38, 3.4028235e38, 3.5e38, 1e-45, 1e-50, 5e-324, 1e300, -1e300]
VALUES += [7, -3, 2**24, 2**24 + 1, 2**53 + 1, 2**63 - 1, 2**64, 0, 0.0, -0.0, math.inf, -math.inf, math.nan]
VALUES += [_rng.uniform(-1, 1) * 10 ** _rng.randint(-40, 40) for _ in range(40)] + [_rng.randint(-999, 999)]
CASES = {  # torch's own operator on a Python number, and the namespace's function
    "x+v": (lambda x, v: x + v, lambda x, v: xp.add(x, v)),
    "v+x": (lambda x, v: v + x, lambda x, v: xp.add(v, x)),
    "x-v": (lambda x, v: x - v, lambda x, v: xp.subtract(x, v)),
    "v-x": (lambda x, v: v - x, lambda x, v: xp.subtract(v, x)),
    "x*v": (lambda x, v: x * v, lambda x, v: xp.multiply(x, v)),
    "v*x": (lambda x, v: v * x, lambda x, v: xp.multiply(v, x)),
    "x/v": (lambda x, v: x / v, lambda x, v: xp.true_divide(x, v)),
    "v/x": (lambda x, v: v / x, lambda x, v: xp.true_divide(v, x)),
}


def _bits(t):
    t = torch.view_as_real(t) if t.is_complex() else t
    return t.contiguous().view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def _run(f, x, v):
    try:
        return f(x, v)
    except (RuntimeError, OverflowError, ZeroDivisionError) as e:
        return e


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32", "complex64"])
def test_kept_numbers_give_torchs_bits(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(600, generator=g, dtype=torch.float64) * 3
    x[:5] = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan], dtype=torch.float64)
    if dtype == "int32":
        x = (x[5:] * 100).to(torch.int32)
    elif dtype == "complex64":
        x = torch.complex(x.float(), x.float().flip(0))
    else:
        x = x.to(getattr(torch, dtype))
    for xx in (x, x[::2], x[:580].reshape(-1, 20).t(), x[7]):  # contiguous, strided, transposed, 0-d
        for v in VALUES:
            for name, (theirs, ours) in CASES.items():
                a, b = _run(theirs, xx, v), _run(ours, xx, v)
                what = f"{name} {dtype} {tuple(xx.shape)} v={v!r}"
                if isinstance(a, Exception) or isinstance(b, Exception):
                    assert type(a) is type(b) and str(a) == str(b), what
                    continue
                assert (a.dtype, a.shape, a.stride()) == (b.dtype, b.shape, b.stride()), what
                assert torch.equal(_bits(a), _bits(b)), what


def test_numbers_are_kept_once_and_bounded():
    x = torch.ones(3)
    t = S._wrapped(x, 0.25)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.ndim == 0 and t.device.type == "cpu"
    assert S._wrapped(x, 0.25) is t and S._wrapped(x.double(), 0.25).dtype == torch.float64
    for v in (0.0, -0.0, math.nan, 2**30):  # left to torch's wrapping
        assert S._wrapped(x, v) is v
    assert S._wrapped(x.half(), 0.25) == 0.25 and S._wrapped(torch.tensor(1.0), 0.25) is t  # (a 0-d one too)
    for k in range(S._MAX_KEPT + 10):  # a number changing every call (a decaying rate) does not pile up
        S._wrapped(x, 1.0 + k / 4096)
    assert len(S._SCALARS[torch.float32]) <= S._MAX_KEPT and set(S._SCALARS) == {torch.float32, torch.float64}
    assert S._NONE == {}


def test_cuda_namespace_keeps_torchs_operators():
    ns = xp.on_device(torch.device("cuda"))
    assert (ns.add, ns.subtract, ns.multiply, ns.true_divide) == (
        operator.add, operator.sub, operator.mul, operator.truediv
    )  # fmt: skip


@pytest.mark.parametrize("op", ["tanh", "sigmoid"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tanh_sigmoid_gradients_are_pytorchs_bits(op, dtype):
    g = torch.Generator().manual_seed(1)
    xv, gv = (torch.randn(4, 33, generator=g, dtype=getattr(torch, dtype)) * 3 for _ in range(2))
    with backends.use("torch"):  # on the default device (cuda under EMBER_DEVICE=cuda): PyTorch's kernels there
        x = ember.tensor(xv.numpy(), requires_grad=True)
        y = getattr(ember, op)(x)
        y.backward(ember.tensor(gv.numpy()))
        assert isinstance(x.grad._data, torch.Tensor)
        here = x.grad._data.device
        tx = xv.clone().to(here).requires_grad_(True)
        getattr(torch, op)(tx).backward(gv.to(here))
        # PyTorch's forward and gradient kernels: its bits
        assert torch.equal(_bits(y._data), _bits(getattr(torch, op)(xv.to(here))))
        assert torch.equal(_bits(x.grad._data), _bits(tx.grad))
    with backends.use("numpy"):  # the NumPy reference is the former rule, unchanged
        x = ember.tensor(xv.numpy(), requires_grad=True, device="cpu")  # (the default device may be another's)
        getattr(ember, op)(x).backward(ember.tensor(gv.numpy(), device="cpu"))
        y = getattr(ember, op)(ember.tensor(xv.numpy(), device="cpu")).numpy()
        if op == "sigmoid":
            np.testing.assert_array_equal(y, np.exp(-np.logaddexp(0, -xv.numpy())))
        want = gv.numpy() * (1 - y * y) if op == "tanh" else gv.numpy() * y * (1 - y)
        np.testing.assert_array_equal(x.grad.numpy(), want)


class _Count(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls[str(func)] += 1
        return func(*args, **(kwargs or {}))


def test_op_chain_makes_pytorchs_kernel_calls():
    """add, mul and tanh with Python numbers, forward and backward: one kernel per op each way (the numbers are
    not wrapped per call, tanh's gradient is one kernel), as PyTorch's autograd."""
    with backends.use("torch"):
        x = ember.randn(8, requires_grad=True)
        step = lambda: ((x + 1.0) * 0.5).tanh().sum().backward()
        step()
        x.grad = None
        with _Count() as c:
            step()
    calls = dict(c.calls)
    assert calls.pop("aten.tanh_backward.default") == 1 and calls.pop("aten.tanh.default") == 1
    assert calls.pop("aten.add.Tensor") == 1 and calls.pop("aten.mul.Tensor") == 2  # forward, and backward's g * 0.5
    assert not {k for k in calls if "rsub" in k or "add" in k or "mul" in k}, calls


def test_compiled_torch_program_calls_operators_directly():
    """A replayed torch program calls each aten overload's C++ entry point (``OpOverload.__call__`` is a Python
    frame around it), and its results stay eager's, step after step."""
    with backends.use("torch"):
        xs = [ember.tensor(np.linspace(-2, 2, 8), requires_grad=True) for _ in range(2)]

        def step(x):
            y = ((x + 1.0) * 0.5).tanh().sigmoid() / 3.0
            y.sum().backward()
            return y

        f = ember.compile(step)
        outs = [f(xs[0]) for _ in range(4)]
        for _ in range(4):
            want = step(xs[1])
        assert not f.eager
        env = f.cache[0].program.run.__globals__
        called = [v for k, v in env.items() if k.startswith("C") and callable(v)]
        assert called and not any(isinstance(v, torch._ops.OpOverload) for v in called)
        assert torch.equal(outs[-1]._data, want._data) and torch.equal(xs[0].grad._data, xs[1].grad._data)
