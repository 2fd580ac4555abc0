"""The pieces of PyTorch's surface that PEFT, accelerate and torchmetrics touch (found by running them with ``torch``
aliased to Ember), each run under PyTorch and Ember alike."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


@pytest.mark.parametrize("shape", [(3, 4), (3, 4, 5), (0, 4), (2, 3, 1, 2)])
def test_init_fan_helpers(shape):
    def fans(lib):
        t = lib.empty(*shape)
        init = lib.nn.init
        return (init._calculate_fan_in_and_fan_out(t), init._calculate_correct_fan(t, "fan_in"),
                init._calculate_correct_fan(t, "FAN_OUT"))  # fmt: skip

    assert fans(ember) == fans(torch)


@LIBS
def test_init_fan_helpers_refuse_like_pytorch(lib):
    with pytest.raises(ValueError, match=r"fewer than 2|at least 2"):
        lib.nn.init._calculate_fan_in_and_fan_out(lib.empty(3))
    with pytest.raises(ValueError, match="Mode fan_x not supported"):
        lib.nn.init._calculate_correct_fan(lib.empty(3, 4), "fan_x")
    with pytest.raises(ValueError, match="Mode fan_x not supported"):
        lib.nn.init.kaiming_uniform_(lib.empty(3, 4), mode="fan_x")


def test_kaiming_mode_in_either_case():
    for lib in (torch, ember):
        lib.manual_seed(0)
    w = {lib.__name__: lib.nn.init.kaiming_uniform_(lib.empty(200, 50), mode="FAN_OUT") for lib in (torch, ember)}
    bound = (6 / 200) ** 0.5  # gain sqrt(2) (leaky_relu, a=0) * sqrt(3) / sqrt(fan_out)
    for t in w.values():
        assert bound * 0.95 < float(t.abs().max()) <= bound


@LIBS
def test_moduledict_update_pop_clear(lib):
    nn = lib.nn
    d = nn.ModuleDict({"a": nn.ReLU()})
    d.update(nn.ModuleDict({"b": nn.Tanh(), "a": nn.Sigmoid()}))  # PEFT: lora_dropout.update(ModuleDict(...))
    assert list(d.keys()) == ["a", "b"] and isinstance(d["a"], nn.Sigmoid)
    d.update([("c", nn.ReLU())])
    d.update((k, m) for k, m in [["e", nn.ELU()]])
    assert list(d) == ["a", "b", "c", "e"]
    assert isinstance(d.pop("b"), nn.Tanh) and list(d) == ["a", "c", "e"]
    with pytest.raises(KeyError):
        d.pop("b")
    assert len(list(d.parameters())) == 0 and [n for n, _ in d.named_modules()] == ["", "a", "c", "e"]
    d.clear()
    assert len(d) == 0 and [n for n, _ in d.named_modules()] == [""]


@LIBS
def test_moduledict_update_refuses_like_pytorch(lib):
    d = lib.nn.ModuleDict()
    with pytest.raises(TypeError, match="iterable of key/value pairs"):
        d.update(3)
    with pytest.raises(TypeError, match="element #0 should be Iterable"):
        d.update([1])
    with pytest.raises(ValueError, match="element #0 has length 3; 2 is required"):
        d.update([("a", lib.nn.ReLU(), 1)])


@pytest.mark.parametrize("spec", ["mps", "xpu:1", "xla", "hpu", "privateuseone:0"])
def test_other_device_types_make_device_objects(spec):
    before = ember.get_default_device()  # (cpu; cuda in make test-cuda)
    t, e = torch.device(spec), ember.device(spec)
    assert (e.type, e.index, repr(e), str(e)) == (t.type, t.index, repr(t), str(t))
    assert e != ember.device("cpu") and e == ember.device(spec) and hash(e) == hash(ember.device(spec))
    with pytest.raises(ValueError, match="not available"):  # no backend serves them
        ember.zeros(2, device=spec)
    with pytest.raises(RuntimeError, match="not available"):
        ember.ones(2).to(spec)
    with pytest.raises(ValueError, match="not available"):
        ember.set_default_device(spec)
    assert ember.get_default_device() == before  # unchanged by the refusal


@LIBS
def test_unknown_device_types_are_refused(lib):
    for spec in ("tpu", "bogus:0"):
        with pytest.raises((RuntimeError, ValueError), match="device"):
            lib.device(spec)
    with pytest.raises((RuntimeError, ValueError), match="mps:x"):
        lib.device("mps:x")


def test_dataloader_takes_pytorchs_positional_order_and_in_order():
    def batches(lib, *args, **kw):
        ds = lib.utils.data.TensorDataset(lib.arange(10))
        dl = lib.utils.data.DataLoader(ds, *args, **kw)
        return [b[0].tolist() for b in dl], dl.drop_last, dl.pin_memory

    # (batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory, drop_last): drop_last is 8th
    args = (4, False, None, None, 0, None, False, True)
    assert batches(ember, *args) == batches(torch, *args) == ([[0, 1, 2, 3], [4, 5, 6, 7]], True, False)
    for lib in (torch, ember):
        assert batches(lib, 3, in_order=False)[0] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
        assert lib.utils.data.DataLoader([1], in_order=False).in_order is False
        with pytest.raises(TypeError):
            lib.utils.data.DataLoader([1], 1, False, None, None, 0, None, False, False, 0, None, None, None, 2)


@LIBS
def test_device_equals_a_string_that_names_no_device(lib):
    d = lib.device("cpu")
    assert (d == "npu") is False and d != "npu" and (d == "auto") is False
    assert d == lib.device("cpu")


@LIBS
def test_an_optimizer_wrapper_that_skips_optimizer_init_steps(lib):
    class Wrapper(lib.optim.Optimizer):  # accelerate's AcceleratedOptimizer: no super().__init__()
        def __init__(self, optimizer):
            self.optimizer = optimizer

        @property
        def param_groups(self):
            return self.optimizer.param_groups

        def step(self, closure=None):
            return self.optimizer.step(closure)

        def zero_grad(self, set_to_none=True):
            self.optimizer.zero_grad(set_to_none)

    w = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
    inner = lib.optim.SGD([w], lr=0.5)
    seen = []
    inner.register_step_pre_hook(lambda opt, args, kwargs: seen.append("pre"))
    opt = Wrapper(inner)
    (w * w).sum().backward()
    opt.step()
    opt.zero_grad()
    assert w.tolist() == [0.0, 0.0] and w.grad is None and seen == ["pre"]


def test_data_parallel_without_cuda_is_the_module():
    if ember.cuda.is_available():
        pytest.skip("this machine has CUDA")
    out = {}
    for lib in (torch, ember):
        lib.manual_seed(0)
        m = lib.nn.Linear(3, 2)
        m.load_state_dict({"weight": lib.tensor([[1.0, 2, 3], [4, 5, 6]]), "bias": lib.tensor([0.5, -0.5])})
        dp = lib.nn.DataParallel(m)
        assert dp.module is m and dp.device_ids == [] and lib.nn.parallel.DataParallel is lib.nn.DataParallel
        x = lib.tensor([[1.0, 0, -1], [2, 1, 0]], requires_grad=True)
        dp(x).pow(2).sum().backward()
        out[lib.__name__] = (list(dp.state_dict()), dp(x).tolist(), m.weight.grad.tolist(), x.grad.tolist())
    assert out["ember"] == out["torch"]
    assert out["ember"][0] == ["module.weight", "module.bias"]


def test_dtensor_and_optimized_module_types():
    from ember.distributed.tensor import DTensor

    assert issubclass(DTensor, ember.Tensor)
    assert not any(isinstance(p, DTensor) for p in ember.nn.Linear(2, 2).parameters())
    with pytest.raises(RuntimeError, match="no distributed tensors"):
        DTensor(ember.ones(2))
    with pytest.raises(RuntimeError, match="no distributed tensors"):
        DTensor.from_local(ember.ones(2))
    m = ember.nn.Linear(2, 2)
    c = ember.compile(m)
    assert isinstance(c, ember._dynamo.eval_frame.OptimizedModule) and c._orig_mod is m
    assert not isinstance(m, ember._dynamo.eval_frame.OptimizedModule)
    assert isinstance(torch.compile(torch.nn.Linear(2, 2)), torch._dynamo.eval_frame.OptimizedModule)


def _bool_index_cases():
    """(name, index builder, input shape): a 0-d bool tensor indexes as True/False does (a new dim of size 1 or 0);
    a bool mask beside an integer covers its own dims (torchmetrics' R2Score: ``rss[cond]`` with 0-d ``cond``)."""
    return [
        ("0d_true_of_0d", lambda L: L.tensor(True), ()),
        ("0d_false_of_0d", lambda L: L.tensor(False), ()),
        ("0d_true_of_1d", lambda L: L.tensor(True), (3,)),
        ("0d_false_of_2d", lambda L: L.tensor(False), (2, 3)),
        ("0d_true_and_int", lambda L: (1, L.tensor(True), 0), (2, 3, 2)),
        ("mask2d_and_int", lambda L: (L.tensor([[True, False, True], [False, True, True]]), 0), (2, 3, 2)),
        ("int_and_mask1d", lambda L: (0, L.tensor([True, False, True])), (2, 3, 2)),
    ]


@pytest.mark.parametrize(("name", "index", "shape"), _bool_index_cases(), ids=[c[0] for c in _bool_index_cases()])
def test_bool_tensor_index_read(name, index, shape):
    from ember.testing import check_op

    x = np.random.default_rng(0).standard_normal(shape)
    check_op(lambda a: a[index(ember)] * 2, x, torch_fn=lambda a: a[index(torch)] * 2, name=name)


@pytest.mark.parametrize(("name", "index", "shape"), _bool_index_cases(), ids=[c[0] for c in _bool_index_cases()])
def test_bool_tensor_index_write(name, index, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    got = {}
    for lib in (torch, ember):
        w = lib.tensor(x, requires_grad=True)
        v = lib.tensor(np.arange(2.0, dtype=np.float64)[:1], requires_grad=True)
        y = w * 1.0
        y[index(lib)] = v * 3  # an in-place write into a non-leaf: gradients to both w and v
        (y * lib.tensor(np.linspace(1.0, 2.0, max(y.numel(), 1)).reshape(shape))).sum().backward()
        got[lib.__name__] = (y.detach().numpy(), w.grad.numpy(), v.grad.numpy())
    for a, b in zip(got["ember"], got["torch"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_pytorch_core_names_libraries_call():
    assert ember._C._log_api_usage_once("torchmetrics.metric.Accuracy") is None
    torch._C._log_api_usage_once("torchmetrics.metric.Accuracy")
    with pytest.raises(TypeError):
        torch._C._log_api_usage_once(3)
    with pytest.raises(TypeError, match="must be str"):
        ember._C._log_api_usage_once(3)
    assert ember._C.__name__ == "ember._C"  # what tells real PyTorch apart (backends.real_torch)
    assert ember.backends.real_torch() is torch


def _once_differentiable_run(lib):
    seen = []

    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            seen.append(lib.is_grad_enabled())
            return 3 * x**2 * g

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    Cube.apply(x).sum().backward()
    out = [x.grad.tolist()]
    (g,) = lib.autograd.grad(Cube.apply(x), x, grad_outputs=lib.ones(2, requires_grad=True), create_graph=True)
    out += [g.tolist(), g.requires_grad]
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked with @once_differentiable"):
        g.sum().backward()
    (g,) = lib.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)  # the seed needs no grad: a plain result
    return [*out, g.requires_grad, seen]


def test_once_differentiable():
    assert _once_differentiable_run(ember) == _once_differentiable_run(torch) == [
        [3.0, 12.0], [3.0, 12.0], True, False, [False, False, False]]  # fmt: skip
    from torch.autograd.function import Function as TorchFunction  # noqa: F401 - the module PyTorch code imports

    from ember.autograd.function import Function, FunctionCtx  # noqa: F401

    assert Function is ember.autograd.Function


def test_pieces_pyro_imports():
    from ember.distributions.utils import _sum_rightmost

    x = np.arange(24.0).reshape(2, 3, 4)
    for d in (0, 1, 2, 3):
        np.testing.assert_array_equal(
            _sum_rightmost(ember.tensor(x), d).numpy(),
            torch.distributions.utils._sum_rightmost(torch.tensor(x), d).numpy(),
        )
    assert ember._C._get_tracing_state() is None and torch._C._get_tracing_state() is None
    assert ember.serialization.MAP_LOCATION is not None and torch.serialization.MAP_LOCATION is not None


@LIBS
def test_register_kl_takes_any_class(lib):
    class Mixin:  # Pyro's Distribution is a base class that does not derive from torch's
        pass

    class MyNormal(lib.distributions.Normal, Mixin):
        pass

    @lib.distributions.kl.register_kl(MyNormal, Mixin)
    def _kl(p, q):
        return lib.tensor(7.0)

    class Other(Mixin):
        pass

    p = MyNormal(lib.tensor(0.0), lib.tensor(1.0))
    assert lib.distributions.kl_divergence(p, Other()).item() == 7.0
    with pytest.raises(TypeError):
        lib.distributions.kl.register_kl(3, Mixin)


@pytest.mark.parametrize("kw", [{}, {"dtype": "float64"}, {"dtype": "float32"}, {"device": "cpu"},
                                {"dtype": "float64", "device": "cpu"}])  # fmt: skip
def test_as_tensor_of_a_tensor_keeps_its_graph(kw):
    """``as_tensor(t, dtype=...)`` is ``t`` itself when nothing changes, else a differentiable copy (it dropped the
    graph: Pyro's HalfCauchy prior lost its gradient, a silently wrong SVI step)."""
    got = {}
    for lib in (torch, ember):
        dev = {} if lib is ember else {"device": str(ember.get_default_device())}  # where Ember's are (test-cuda)
        u = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True, **dev)
        s = u.exp()
        a = lib.as_tensor(s, **{k: getattr(lib, v) if k == "dtype" else v for k, v in kw.items()})
        (a * lib.tensor([1.0, 3.0], dtype=a.dtype, device=a.device)).sum().backward()
        got[lib.__name__] = (a is s, a.requires_grad, str(a.dtype).split(".")[-1], u.grad.tolist())
    if "device" in kw and ember.zeros(1, device=kw["device"])._backend is not ember.zeros(1)._backend:  # a move
        assert got["ember"][0] is False
        got["torch"] = (False, *got["torch"][1:])  # (the fake-device run: torch's CPU is the default, beside "cpu")
    assert got["ember"] == got["torch"]


def test_tensors_take_a_programs_own_attributes():
    import copy
    import pickle

    def run(lib):
        t = lib.ones(2)
        t.note = [1]
        w = lib.nn.Parameter(lib.ones(2))
        w.no_decay = True
        c, p = copy.deepcopy(t), pickle.loads(pickle.dumps(t))
        return (t.note, c.note, c.note is t.note, p.note, hasattr(t.detach(), "note"), hasattr(t + 1, "note"),
                hasattr(copy.deepcopy(w), "no_decay"), pickle.loads(pickle.dumps(w)).no_decay, dict(t.__dict__),
                lib.ones(1).__dict__)  # fmt: skip

    assert run(ember) == run(torch) == ([1], [1], False, [1], False, False, False, True, {"note": [1]}, {})
    with pytest.raises(AttributeError, match="nope"):
        _ = ember.ones(1).nope
