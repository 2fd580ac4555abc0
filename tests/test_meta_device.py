"""The meta device (``backends/meta_backend.py``): the same code runs under PyTorch and Ember and must give the same
shapes, dtypes, devices, strides, ``requires_grad`` and exception types, without allocating any data."""

from __future__ import annotations

import contextlib
import copy
import io
import warnings

import numpy as np
import pytest

import ember
from ember.backends._meta_array import MetaArray

torch = pytest.importorskip("torch")

LIBS = {"ember": ember, "torch": torch}
KINDS = (NotImplementedError, RuntimeError, TypeError, IndexError, ValueError, Exception)


def desc(t):
    """What a meta tensor is: shape, dtype, device type, strides, requires_grad."""
    return (tuple(t.shape), str(t.dtype).split(".")[-1], t.device.type, tuple(t.stride()), t.requires_grad)


def both(fn):
    """``fn(lib)`` under each library: its result, or the exception type."""
    out = {}
    for name, lib in LIBS.items():
        try:  # torch's on Ember's default device (cuda on a GPU machine: a CPU scalar joins a meta op there alike)
            with torch.device(ember.get_default_device().type) if lib is torch else contextlib.nullcontext():
                out[name] = fn(lib)
        except Exception as e:
            # (Ember's errors are subclasses of PyTorch's types: ShapeError is a RuntimeError and a ValueError)
            out[name] = next(k.__name__ for k in KINDS if isinstance(e, k))
    return out


def same(fn):
    out = both(fn)
    assert out["ember"] == out["torch"], out
    return out["ember"]


CREATION = {
    "empty": lambda L: L.empty(2, 3, device="meta", dtype=L.float16),
    "zeros": lambda L: L.zeros(2, 3, device="meta"),
    "ones tuple": lambda L: L.ones((2, 3), device="meta", requires_grad=True),
    "full int": lambda L: L.full((2, 3), 7, device="meta"),
    "full float": lambda L: L.full((4,), 1.5, device="meta"),
    "rand": lambda L: L.rand(2, 3, device="meta"),
    "randn f64": lambda L: L.randn(2, 3, device="meta", dtype=L.float64),
    "randint": lambda L: L.randint(5, (4,), device="meta"),
    "randint low high": lambda L: L.randint(2, 5, (4, 2), device="meta"),
    "randperm": lambda L: L.randperm(5, device="meta"),
    "arange": lambda L: L.arange(5, device="meta"),
    "arange float": lambda L: L.arange(0, 1, 0.25, device="meta"),
    "linspace": lambda L: L.linspace(0, 1, 5, device="meta"),
    "eye": lambda L: L.eye(3, 4, device="meta"),
    "tensor": lambda L: L.tensor([[1.0, 2.0]], device="meta"),
    "tensor int": lambda L: L.tensor([1, 2], device="meta"),
    "scalar": lambda L: L.ones((), device="meta"),
    "empty dim": lambda L: L.zeros(0, 3, device="meta"),
    "zeros_like": lambda L: L.zeros_like(L.empty(2, 3, device="meta")),
    "ones_like f64": lambda L: L.ones_like(L.empty(2, 3, device="meta"), dtype=L.float64),
    "empty_like": lambda L: L.empty_like(L.empty(2, 3, device="meta")),
    "rand_like": lambda L: L.rand_like(L.empty(2, 3, device="meta")),
    "randn_like": lambda L: L.randn_like(L.empty(2, 3, device="meta")),
    "full_like": lambda L: L.full_like(L.empty(2, 3, device="meta"), 2.0),
    "randint_like": lambda L: L.randint_like(L.empty(2, 3, device="meta"), 3),
    "like to cpu": lambda L: L.zeros_like(L.empty(2, 3, device="meta"), device="cpu"),
    "new_zeros": lambda L: L.empty(2, device="meta").new_zeros(3, 4),
    "new_ones": lambda L: L.empty(2, device="meta", dtype=L.float64).new_ones(3),
    "new_empty": lambda L: L.empty(2, device="meta").new_empty((3,)),
    "new_full": lambda L: L.empty(2, device="meta").new_full((3,), 1.0),
    "new_tensor": lambda L: L.empty(2, device="meta").new_tensor([1, 2]),
    "cpu to meta": lambda L: L.ones(2, 3).to("meta"),
    "cpu to meta f64": lambda L: L.ones(2, 3).to("meta", L.float64),
    "device object": lambda L: L.zeros(2, device=L.device("meta")),
}


@pytest.mark.parametrize("case", CREATION)
def test_creation_matches_torch(case):
    same(lambda L: desc(CREATION[case](L)))


def test_default_device_and_device_block():
    before = ember.get_default_device()  # (cpu; cuda in make test-cuda)

    def run(L):
        with L.device("meta"):
            a, lin = L.ones(2), L.nn.Linear(2, 3)
        L.set_default_device("meta")
        try:
            b, c = L.randn(3, 2), L.nn.Conv2d(1, 2, 3).weight
        finally:
            L.set_default_device(None)  # (torch: "cpu" would leave its device mode on, and under any function mode
            # torch 2.13's F.l1_loss drops its weight: a later test saw it)
        try:
            made = [desc(t) for t in (a, lin.weight, lin.bias, b, c)]
            return made, L.ones(1).device.type, a.is_meta, L.ones(1).is_meta
        finally:
            ember.set_default_device(before)  # Ember's default for the later tests (None is the CPU, as torch's)

    same(run)


def _big(L):
    nn, F = L.nn, L.nn.functional

    class Big(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(8 * 4 * 4, 10)
            self.emb = nn.Embedding(20, 6)
            self.ln = nn.LayerNorm(6)
            self.attn = nn.MultiheadAttention(6, 2, batch_first=True)
            self.drop = nn.Dropout(0.1)

        def forward(self, x, ids):
            h = self.pool(F.relu(self.bn(self.conv(x))))
            h = self.fc(self.drop(h.flatten(1)))
            e = self.ln(self.emb(ids))
            a, _ = self.attn(e, e, e)
            return F.log_softmax(h, -1), a.mean(1)

    return Big


def test_module_forward_and_backward_on_meta_match_torch():
    def run(L):
        with L.device("meta"):
            m = _big(L)()
        x = L.randn(2, 3, 8, 8, device="meta")
        ids = L.randint(0, 20, (2, 5), device="meta")
        out, a = m(x, ids)
        loss = L.nn.functional.nll_loss(out, L.zeros(2, dtype=L.long, device="meta")) + a.sum()
        loss.backward()
        grads = [(n, desc(p), desc(p.grad)) for n, p in m.named_parameters()]
        bufs = [(n, desc(b)) for n, b in m.named_buffers()]
        return desc(out), desc(a), desc(loss), grads, bufs

    same(run)


_MADE: list = []  # the inputs ``_x`` made for the case running now


def _x(L, *shape, dtype=None, grad=True):
    t = L.empty(*shape, device="meta", dtype=dtype or L.float32, requires_grad=grad)
    _MADE.append(t)
    return t


OPS = {
    "add broadcast": lambda L: _x(L, 3, 1) + _x(L, 4),
    "mul promote": lambda L: _x(L, 3, dtype=L.float16) * _x(L, 3, dtype=L.float64),
    "int + float": lambda L: L.ones(3, device="meta", dtype=L.int32) + _x(L, 3),
    "float + number": lambda L: _x(L, 3, dtype=L.float16) * 2.5,
    "div int": lambda L: L.ones(3, device="meta", dtype=L.int64) / 2,
    "compare": lambda L: _x(L, 2, 3) > 0,
    "where": lambda L: L.where(_x(L, 2, 3, grad=False) > 0, _x(L, 2, 3), 0.0),
    "pow exp": lambda L: (_x(L, 2, 3) ** 2).exp().tanh().sigmoid(),
    "matmul": lambda L: _x(L, 5, 3, 4) @ _x(L, 4, 2),
    "matmul vec": lambda L: _x(L, 3, 4) @ _x(L, 4),
    "bmm": lambda L: L.bmm(_x(L, 2, 3, 4), _x(L, 2, 4, 5)),
    "linear": lambda L: L.nn.functional.linear(_x(L, 6, 4), _x(L, 3, 4), _x(L, 3)),
    "conv1d": lambda L: L.nn.functional.conv1d(_x(L, 2, 3, 10), _x(L, 4, 3, 3), stride=2),
    "conv2d groups": lambda L: L.nn.functional.conv2d(_x(L, 2, 4, 9, 9), _x(L, 6, 2, 3, 3), padding=1, groups=2),
    "conv_transpose2d": lambda L: L.nn.functional.conv_transpose2d(_x(L, 2, 4, 5, 5), _x(L, 4, 3, 3, 3), stride=2),
    "max_pool2d": lambda L: L.nn.functional.max_pool2d(_x(L, 2, 3, 9, 9), 3, 2, ceil_mode=True),
    "max_pool indices": lambda L: L.nn.functional.max_pool2d(_x(L, 2, 3, 8, 8), 2, return_indices=True)[1],
    "avg_pool2d": lambda L: L.nn.functional.avg_pool2d(_x(L, 2, 3, 8, 8), 3, 2, padding=1),
    "adaptive_avg": lambda L: L.nn.functional.adaptive_avg_pool2d(_x(L, 2, 3, 8, 8), (2, 3)),
    "batch_norm": lambda L: L.nn.functional.batch_norm(
        _x(L, 4, 3, 5), L.zeros(3, device="meta"), L.ones(3, device="meta"), _x(L, 3), _x(L, 3), training=True
    ),
    "layer_norm": lambda L: L.nn.functional.layer_norm(_x(L, 2, 5, 6), (6,), _x(L, 6), _x(L, 6)),
    "group_norm": lambda L: L.nn.functional.group_norm(_x(L, 2, 6, 4), 3, _x(L, 6), _x(L, 6)),
    "softmax": lambda L: L.softmax(_x(L, 2, 5), -1),
    "log_softmax": lambda L: L.nn.functional.log_softmax(_x(L, 2, 5, dtype=L.float64), 1),
    "sum dims": lambda L: _x(L, 2, 3, 4).sum((0, 2), keepdim=True),
    "mean": lambda L: _x(L, 2, 3, 4).mean(1),
    "max dim": lambda L: _x(L, 2, 3, 4).max(1)[0],
    "argmax": lambda L: _x(L, 2, 3, 4).argmax(-1),
    "var": lambda L: _x(L, 2, 3, 4).var(1),
    "int sum": lambda L: L.ones(2, 3, device="meta", dtype=L.int32).sum(),
    "reshape": lambda L: _x(L, 2, 3, 4).reshape(6, -1),
    "view": lambda L: _x(L, 2, 3, 4).view(-1),
    "permute": lambda L: _x(L, 2, 3, 4).permute(2, 0, 1),
    "transpose": lambda L: _x(L, 2, 3, 4).transpose(0, 2),
    "permute contiguous": lambda L: _x(L, 2, 3, 4).permute(2, 0, 1).contiguous(),
    "permute then add": lambda L: _x(L, 2, 3, 4).permute(2, 0, 1) * 2,
    "expand": lambda L: _x(L, 3, 1).expand(3, 4),
    "unsqueeze squeeze": lambda L: _x(L, 3, 1).unsqueeze(0).squeeze(-1),
    "slices": lambda L: _x(L, 5, 6)[1:, ::2],
    "int index": lambda L: _x(L, 5, 6)[2],
    "tensor index": lambda L: _x(L, 5, 6)[L.tensor([0, 3, 1], device="meta")],
    "mixed index": lambda L: _x(L, 5, 6, 7)[:, L.tensor([0, 2], device="meta"), 1],
    "two tensor index": lambda L: _x(L, 5, 6, 7)[L.tensor([0, 2], device="meta"), :, L.tensor([1, 3], device="meta")],
    "cat": lambda L: L.cat([_x(L, 2, 3), _x(L, 4, 3)]),
    "stack": lambda L: L.stack([_x(L, 2, 3), _x(L, 2, 3)], 1),
    "split": lambda L: _x(L, 5, 3).split([2, 3])[1],
    "chunk": lambda L: _x(L, 5, 3).chunk(2, 0)[1],
    "flatten": lambda L: _x(L, 2, 3, 4).flatten(1),
    "embedding": lambda L: L.nn.functional.embedding(L.zeros(2, 5, dtype=L.long, device="meta"), _x(L, 10, 4)),
    "dropout": lambda L: L.nn.functional.dropout(_x(L, 4, 5), 0.3),
    "gelu": lambda L: L.nn.functional.gelu(_x(L, 4, 5)),
    "mse": lambda L: L.nn.functional.mse_loss(_x(L, 4, 5), _x(L, 4, 5, grad=False)),
    "cross_entropy": lambda L: L.nn.functional.cross_entropy(_x(L, 4, 5), L.zeros(4, dtype=L.long, device="meta")),
    "bce logits": lambda L: L.nn.functional.binary_cross_entropy_with_logits(_x(L, 4), _x(L, 4, grad=False)),
    "sdpa causal": lambda L: L.nn.functional.scaled_dot_product_attention(
        _x(L, 2, 2, 5, 4), _x(L, 2, 2, 5, 4), _x(L, 2, 2, 5, 4), is_causal=True
    ),
    "pad": lambda L: L.nn.functional.pad(_x(L, 2, 3, 4), (1, 2)),
    "cumsum": lambda L: _x(L, 2, 3).cumsum(1),
    "clamp": lambda L: _x(L, 2, 3).clamp(-1, 1),
    "einsum": lambda L: L.einsum("bij,bjk->bik", _x(L, 2, 3, 4), _x(L, 2, 4, 5)),
    "to float64": lambda L: _x(L, 2, 3).double(),
    "quantile": lambda L: L.quantile(_x(L, 4, 5), 0.25, dim=0, keepdim=True),
    "max_unpool2d": lambda L: L.nn.functional.max_unpool2d(
        *L.nn.functional.max_pool2d(_x(L, 2, 3, 8, 8), 2, return_indices=True), 2
    ),
    "prod": lambda L: _x(L, 3, 4).prod(1),
    "prod all": lambda L: _x(L, 3, 4).prod(),
    "cumprod": lambda L: _x(L, 3, 4).cumprod(1),
    "int floordiv": lambda L: L.ones(3, device="meta", dtype=L.int64) // L.ones(3, device="meta", dtype=L.int64),
    "int remainder": lambda L: L.ones(3, device="meta", dtype=L.int32) % L.ones(3, device="meta", dtype=L.int32),
}


@pytest.mark.parametrize("case", OPS)
def test_operator_on_meta_matches_torch(case):
    """Forward result, and the gradients of every input that requires one (backward on meta gives meta grads)."""

    def run(L):
        _MADE.clear()
        y = OPS[case](L)
        grads = []
        if y.requires_grad:
            y.sum().backward() if y.ndim else y.backward()
            grads = [desc(t.grad) for t in _MADE if t.requires_grad]
        return desc(y), grads

    same(run)


INPLACE = {
    "add_": lambda L, x: x.add_(1),
    "mul_ view": lambda L, x: x[1:].mul_(2),
    "setitem": lambda L, x: x.__setitem__((slice(None), 0), 3.0) or x,
    "t_": lambda L, x: x.t_(),
    "transpose_ view": lambda L, x: x.view(4, 3).transpose_(0, 1),
    "copy_ from cpu": lambda L, x: x.copy_(L.ones(3, 4)),
    "zero_": lambda L, x: x.zero_(),
}


@pytest.mark.parametrize("case", INPLACE)
def test_inplace_and_view_cases_match_torch(case):
    def run(L):
        w = L.empty(3, 4, device="meta", requires_grad=True)
        x = w * 1.0
        y = INPLACE[case](L, x)
        (y * y).sum().backward()
        return desc(y), desc(x), desc(w.grad), x._version > 0 if hasattr(x, "_version") else None

    out = both(run)
    assert out["ember"][:3] == out["torch"][:3], out


READS = {
    "item": lambda L: L.ones((), device="meta").item(),
    "item of many": lambda L: L.ones(3, device="meta").item(),
    "tolist": lambda L: L.ones(3, device="meta").tolist(),
    "numpy": lambda L: L.ones(3, device="meta").numpy(),
    "numpy grad": lambda L: L.ones(3, device="meta", requires_grad=True).numpy(),
    "bool": lambda L: bool(L.ones((), device="meta")),
    "float": lambda L: float(L.ones((), device="meta")),
    "int": lambda L: int(L.ones((), device="meta", dtype=L.long)),
    "format": lambda L: f"{L.ones((), device='meta'):.2f}",
    "cpu": lambda L: L.ones(3, device="meta").cpu(),
    "to cpu": lambda L: L.ones(3, device="meta").to("cpu"),
    "copy_ out": lambda L: L.zeros(3).copy_(L.ones(3, device="meta")),
    "is_nonzero": lambda L: L.ones((), device="meta").is_nonzero(),
    "mixed devices": lambda L: L.ones(3, device="meta") + L.ones(3),
    "mixed devices, cpu first": lambda L: L.ones(3) * L.ones(3, device="meta"),
    "nonzero": lambda L: L.nonzero(L.ones(3, device="meta")),
    "bool mask": lambda L: L.ones(3, device="meta")[L.ones(3, device="meta") > 0],
    "unique": lambda L: L.unique(L.ones(3, device="meta")),
    "equal": lambda L: L.equal(L.ones(3, device="meta"), L.ones(3, device="meta")),
}


@pytest.mark.parametrize("case", READS)
def test_reading_values_raises_as_torch(case):
    same(lambda L: READS[case](L))


def test_messages_of_value_reads_are_torchs():
    for f, want in [
        (lambda L: L.ones((), device="meta").item(), "Tensor.item() cannot be called on meta tensors"),
        (lambda L: L.ones(2, device="meta").numpy(), "can't convert meta device type tensor to numpy"),
        (lambda L: L.ones(2, device="meta").cpu(), "Cannot copy out of meta tensor; no data!"),
        (lambda L: L.ones(2, device="meta").tolist(), "Cannot copy out of meta tensor; no data!"),
    ]:
        for lib in LIBS.values():
            with pytest.raises((RuntimeError, NotImplementedError, TypeError)) as info:
                f(lib)
            assert str(info.value).startswith(want), (lib.__name__, str(info.value))


def test_cpu_scalars_join_meta_ops_as_in_torch():
    same(
        lambda L: [
            desc(t) for t in (L.ones(3, device="meta") * L.tensor(2.0), L.tensor(2.0) + L.ones(3, device="meta"))
        ]
    )


def test_printing_matches_torch():
    def run(L):
        ts = [
            L.empty(3, 4, device="meta"),
            L.zeros(3, device="meta", dtype=L.int64),
            L.zeros(2, device="meta", dtype=L.float64, requires_grad=True) * 2,
            L.ones((), device="meta"),
            L.zeros(2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, device="meta", dtype=L.float64, requires_grad=True),
            L.nn.Parameter(L.empty(3, 4, device="meta")),
        ]
        return [repr(t).replace("torch.", "").replace("ember.", "").replace("MulBackward0", "Mul") for t in ts]

    same(run)


def test_no_memory_for_a_huge_meta_model():
    """A 100,000 x 100,000 linear layer (40 GB of float32) with a forward and backward costs no memory."""

    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    warm = ember.nn.Linear(3, 4, device="meta")
    warm(ember.empty(2, 3, device="meta")).sum().backward()
    before = rss()
    m = ember.nn.Linear(100_000, 100_000, device="meta")
    m(ember.empty(8, 100_000, device="meta")).sum().backward()
    assert m.weight.grad.shape == (100_000, 100_000) and m.weight.grad.is_meta
    assert m.weight.nbytes == 4 * 10**10
    assert rss() - before < 64 * 2**20


def test_init_empty_weights_to_empty_and_assign_match_torch():
    def run(L):
        L.manual_seed(0)
        ref = _big(L)()
        ref.eval()
        sd = ref.state_dict()
        with L.device("meta"):
            m = _big(L)()
        w0 = m.fc.weight
        keys = m.load_state_dict(sd, assign=True)
        m.eval()
        x, ids = L.randn(2, 3, 8, 8), L.randint(0, 20, (2, 5))
        same_out = [L.equal(u, v) for u, v in zip(ref(x, ids), m(x, ids), strict=True)]
        p = m.fc.weight
        shared = p.data_ptr() == sd["fc.weight"].data_ptr()
        # (Departure: Ember's parameter object stays the same, now holding the value; PyTorch makes a new one)
        assert (w0 is p) == (L is ember)
        return (list(keys.missing_keys), list(keys.unexpected_keys), same_out, desc(p), shared,
                isinstance(p, L.nn.Parameter), desc(m.bn.num_batches_tracked))  # fmt: skip

    same(run)


def test_assign_keeps_the_state_dicts_dtype_and_requires_grad_flags():
    def run(L):
        m = L.nn.Linear(3, 4, device="meta")
        m.weight.requires_grad_(False)
        m.load_state_dict({"weight": L.zeros(4, 3, dtype=L.float64), "bias": L.zeros(4, dtype=L.float64)}, assign=True)
        return desc(m.weight), desc(m.bias)

    same(run)


def test_loading_into_meta_without_assign_warns_and_does_nothing():
    def run(L):
        m = L.nn.Linear(3, 4, device="meta")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m.load_state_dict(L.nn.Linear(3, 4).state_dict())
        return desc(m.weight), sorted({(w.category.__name__, "assign=True" in str(w.message)) for w in caught})

    same(run)


def test_to_empty_then_reset_parameters_matches_torch():
    def run(L):
        with L.device("meta"):
            m = L.nn.Sequential(L.nn.Linear(3, 4), L.nn.BatchNorm1d(4))
        m[0].weight.grad = L.empty(4, 3, device="meta")
        own = L.nn.Linear(2, 2, device="meta")
        own.to_empty(device="cpu", recurse=False)
        assert m.to_empty(device="cpu") is m
        m[0].reset_parameters()
        m[1].reset_parameters()
        finite = bool(L.isfinite(m[0].weight).all()) and float(m[1].running_var.sum()) == 4.0
        return [desc(p) for p in m.state_dict().values()], desc(m[0].weight.grad), finite, desc(own.weight)

    same(run)


def test_recurse_false_leaves_children_on_meta():
    def run(L):
        with L.device("meta"):
            outer = L.nn.Module()
            outer.a = L.nn.Parameter(L.empty(2))
            outer.child = L.nn.Linear(2, 2)
        outer.to_empty(device="cpu", recurse=False)
        return outer.a.device.type, outer.child.weight.device.type

    same(run)


def test_deepcopy_to_meta_and_state_dict_match_torch():
    def run(L):
        ref = L.nn.Sequential(L.nn.Linear(3, 4), L.nn.BatchNorm1d(4))
        base = copy.deepcopy(ref).to("meta")
        twin = copy.deepcopy(base)
        sd = base.state_dict()
        return ([(k, desc(v)) for k, v in sd.items()], desc(twin[0].weight), twin[0].weight is base[0].weight,
                ref[0].weight.device.type)  # fmt: skip

    same(run)


def test_save_and_load_keep_meta_tensors():
    def run(L):
        f = io.BytesIO()
        w = L.nn.Linear(3, 4, device="meta").weight
        L.save({"x": L.empty(2, 3, device="meta", dtype=L.float16), "w": w}, f)
        f.seek(0)
        back = L.load(f)
        return desc(back["x"]), desc(back["w"])

    same(run)


# -- the array rules themselves, against NumPy ------------------------------------------------------------
INDICES = [
    (1,), (slice(1, None),), (slice(None, None, 2), 1), (None, Ellipsis, 0), (Ellipsis, None), (-1, slice(None), 2),
    (np.array([0, 2]),), (slice(None), np.array([[0], [1]]), np.array([1, 2])), (np.array([0, 1]), slice(None),
    np.array([1, 2])), (1, slice(None), np.array([0, 2])), (np.array([True, False, True]),),
]  # fmt: skip


@pytest.mark.parametrize("index", INDICES, ids=[str(i) for i in range(len(INDICES))])
def test_meta_array_indexing_follows_numpy(index):
    a = np.empty((3, 4, 5), dtype=np.float32)
    m = MetaArray((3, 4, 5), np.float32)
    want = a[index]
    got = m[index]
    assert got.shape == want.shape
    if want.base is not None and not any(isinstance(i, np.ndarray) for i in index):  # a view: its strides too
        assert got.strides == want.strides
        assert got.storage is m.storage


@pytest.mark.parametrize("fn", ["add", "multiply", "true_divide", "power", "less", "maximum", "arctan2"])
@pytest.mark.parametrize(
    "a,b", [(np.float32, 2.0), (np.int32, 2), (np.int64, 2.5), (np.float16, np.float64), (np.bool_, np.int8)]
)
def test_meta_array_elementwise_dtypes_follow_numpy(fn, a, b):
    x = np.ones((2, 1), dtype=a)
    y = np.ones((3,), dtype=b) if isinstance(b, type) else b
    want = getattr(np, fn)(x, y)
    mx = MetaArray((2, 1), a)
    my = MetaArray((3,), b) if isinstance(b, type) else b
    got = getattr(np, fn)(mx, my)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)


def test_meta_array_has_no_values():
    m = MetaArray((2, 3), np.float32)
    for read in (lambda: np.asarray(m), lambda: float(m[0, 0]), lambda: bool(m.sum() > 0)):
        with pytest.raises(NotImplementedError, match="no data"):
            read()
    with pytest.raises(NotImplementedError, match="tensordot"):
        np.tensordot(m, m)


MODULES = {
    "transformer encoder": lambda L: L.nn.TransformerEncoder(
        L.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), 2
    ),
    "bidirectional lstm": lambda L: L.nn.LSTM(8, 12, num_layers=2, batch_first=True, bidirectional=True),
    "gru": lambda L: L.nn.GRU(8, 12),
    "conv1d stack": lambda L: L.nn.Sequential(
        L.nn.Conv1d(3, 4, 3), L.nn.BatchNorm1d(4), L.nn.AdaptiveMaxPool1d(2), L.nn.Flatten(), L.nn.Linear(8, 2)
    ),
}
INPUTS = {
    "transformer encoder": (2, 5, 16),
    "bidirectional lstm": (2, 7, 8),
    "gru": (7, 2, 8),
    "conv1d stack": (2, 3, 9),
}


@pytest.mark.parametrize("case", MODULES)
def test_more_layers_forward_and_backward_on_meta_match_torch(case):
    def run(L):
        with L.device("meta"):
            m = MODULES[case](L)
        out = m(L.empty(*INPUTS[case], device="meta"))
        y = out[0] if isinstance(out, tuple) else out
        y.sum().backward()
        return desc(y), [(n, desc(p.grad)) for n, p in m.named_parameters()]

    same(run)


@pytest.mark.parametrize("opt", ["SGD", "Adam", "AdamW"])
def test_optimizer_step_on_meta_parameters_matches_torch(opt):
    def run(L):
        m = L.nn.Linear(3, 4, device="meta")
        o = getattr(L.optim, opt)(m.parameters(), lr=0.1, **({"momentum": 0.9} if opt == "SGD" else {}))
        m(L.empty(2, 3, device="meta")).sum().backward()
        o.step()
        state = o.state[m.weight]
        return desc(m.weight), sorted((k, desc(v)) for k, v in state.items() if k != "step")

    same(run)


def test_meta_draws_leave_the_generator_alone():
    """Random numbers on meta are shapes only: the CPU generator's next draw is the same as without them."""

    def run(L):
        L.manual_seed(0)
        a = L.rand(4).tolist()
        L.manual_seed(0)
        L.randn(3, device="meta"), L.randint(0, 5, (3,), device="meta"), L.randperm(6, device="meta")
        L.nn.functional.dropout(L.ones(3, device="meta"), 0.5)
        L.nn.Linear(8, 8, device="meta")
        return a == L.rand(4).tolist()

    assert same(run) is True


def test_a_pytorch_file_with_meta_tensors_loads_on_meta(tmp_path):
    path = tmp_path / "meta.pt"
    torch.save(
        {"w": torch.empty(3, 4, device="meta").t(), "p": torch.nn.Parameter(torch.empty(2, device="meta"))}, path
    )
    want = {k: desc(v) for k, v in torch.load(path, map_location="cpu").items()}
    got = {k: desc(v) for k, v in ember.load(path, map_location="cpu").items()}
    assert got == want and want["w"][2] == "meta"


def test_skip_init_builds_on_meta_then_gives_memory():
    def run(L):
        class NoDevice(L.nn.Module):
            def __init__(self):
                super().__init__()

        m = L.nn.utils.skip_init(L.nn.Linear, 3, 4, dtype=L.float64)
        try:
            L.nn.utils.skip_init(NoDevice)
            refused = None
        except RuntimeError:
            refused = "RuntimeError"
        return desc(m.weight), desc(m.bias), refused

    same(run)
