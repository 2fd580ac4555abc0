import gc
import runpy
import threading
import tracemalloc

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import Function, detect_anomaly, grad, gradcheck, gradgradcheck


def f64(*shape):
    return ember.randn(*shape, dtype=ember.float64, requires_grad=True)


def test_chain_rule_and_accumulation_across_paths():
    x = ember.tensor(3.0, requires_grad=True)
    y = x * x + x * 2  # two paths to x
    y.backward()
    assert x.grad.item() == pytest.approx(8.0)


def test_broadcast_gradients_reduce_to_input_shape():
    a, b = f64(3, 1), f64(4)
    (a * b).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,)
    np.testing.assert_allclose(a.grad.numpy()[:, 0], np.full(3, b.detach().numpy().sum()))


def test_backward_returns_gradients_value():
    w = f64(2, 2)
    g = (w * w).sum().backward()
    assert w in g
    np.testing.assert_allclose(g[w].numpy(), 2 * w.detach().numpy())


def test_shared_grad_not_aliased_between_leaves():
    a, b = f64(2), f64(2)
    (a + b).sum().backward()
    a.grad += 1
    np.testing.assert_allclose(b.grad.numpy(), np.ones(2))


def test_second_backward_through_freed_graph_raises():
    x = f64(2)
    y = (x.exp()).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_retain_graph_allows_second_backward():
    x = f64(2)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * x.detach().numpy())


def test_non_scalar_backward_needs_gradient():
    x = f64(3)
    with pytest.raises(RuntimeError, match=r"shape \(3,\)"):
        (x * 2).backward()


def test_nan_loss_backpropagates_by_default(torch):
    # PyTorch's behaviour: no refusal, no host sync; the gradients are whatever the chain rule gives
    def run(lib):
        x = lib.tensor([1.0, 0.0, 2.0], requires_grad=True)
        y = (x.log() * x).sum()  # log(0) * 0 = nan
        y.backward()
        return y.item(), x.grad.tolist()

    (ye, ge), (yt, gt) = run(ember), run(torch)
    assert np.isnan(ye) and np.isnan(yt)
    np.testing.assert_allclose(ge, gt, equal_nan=True)


def test_inf_loss_backpropagates_by_default():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    (-x.log()).sum().backward()  # inf loss, finite gradient where defined
    np.testing.assert_allclose(x.grad.tolist(), [-np.inf, -1.0])


def test_nan_loss_refused_when_asked():
    x = ember.tensor([1.0, -1.0], requires_grad=True)
    assert not ember.autograd.is_nonfinite_check_enabled()
    ember.autograd.set_nonfinite_check(True)
    try:
        with pytest.raises(FloatingPointError, match="nan"):
            x.log().sum().backward()
    finally:
        ember.autograd.set_nonfinite_check(False)
    x.log().sum().backward()  # off again


def test_nan_loss_refused_under_detect_anomaly():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x * float("inf")).sum()
    with ember.autograd.detect_anomaly(), pytest.raises(FloatingPointError):
        y.backward()


def test_only_leaf_and_retained_grads_kept():
    x = f64(2)
    h = x * 2
    z = x * 3
    z.retain_grad()
    (h.sum() + z.sum()).backward()
    with pytest.warns(UserWarning, match="not a leaf"):  # as PyTorch: reading it is likely a mistake
        assert h.grad is None
    np.testing.assert_allclose(z.grad.numpy(), np.ones(2))


def test_inplace_change_to_saved_tensor_is_an_error():
    x = f64(3)
    h = x * 1
    y = h * h
    with ember.no_grad():
        h += 1
    with pytest.raises(RuntimeError, match="modified by an in-place"):
        y.sum().backward()


def test_inplace_on_leaf_requiring_grad_refused():
    x = f64(2)
    with pytest.raises(RuntimeError, match="leaf"):
        x += 1


def test_inplace_add_keeps_history():
    x = f64(3)
    h = x * 2
    h += x
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 3.0))


def test_setitem_differentiable():
    x, v = f64(4), f64(2)
    h = x * 1
    h[1:3] = v
    (h * h).sum().backward()
    xd = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), [2 * xd[0], 0, 0, 2 * xd[3]])
    np.testing.assert_allclose(v.grad.numpy(), 2 * v.detach().numpy())


def test_view_shares_storage_and_version():
    x = ember.zeros(2, 3)
    v = x.reshape(6)
    v[0] = 5.0
    assert x[0, 0].item() == 5.0
    assert x._vc is v._vc and x._vc[0] == 1


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.tanh(),
        lambda x: x.exp(),
        lambda x: x * x * x,
        lambda x: (x @ x.T).sum(dim=1),
        lambda x: F.log_softmax(x, 1),
        lambda x: F.softmax(x, 0),
    ],
)
def test_second_order(fn):
    x = f64(3, 3)
    assert gradcheck(fn, [x])
    assert gradgradcheck(fn, [x])


def test_mlp_hessian_vector_product_matches_finite_difference():
    ember.manual_seed(1)
    w1, w2 = f64(4, 5), f64(5, 1)
    x = ember.randn(8, 4, dtype=ember.float64)

    def loss(w: ember.Tensor) -> ember.Tensor:
        return ((x @ w).tanh() @ w2).pow(2).sum()

    v = ember.randn(4, 5, dtype=ember.float64)
    _, hv = ember.autograd.functional.hvp(loss, w1, v)
    eps = 1e-6
    (gp,) = grad(loss(_p := (w1.detach() + eps * v).requires_grad_()), [_p])
    (gm,) = grad(loss(_m := (w1.detach() - eps * v).requires_grad_()), [_m])
    np.testing.assert_allclose(hv.numpy(), ((gp - gm) / (2 * eps)).numpy(), rtol=1e-4, atol=1e-6)


def test_grad_function_with_create_graph():
    x = f64(3)
    (g,) = grad((x**3).sum(), x, create_graph=True)
    (gg,) = grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * x.detach().numpy())


def test_hooks_modify_gradient():
    x = f64(3)
    h = x * 2
    h.register_hook(lambda g: g * 10)
    handle = x.register_hook(lambda g: g + 1)
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 21.0))
    handle.remove()


def test_user_function():
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x**2 * g

    x = f64(4)
    assert gradcheck(Cube.apply, [x])


def test_detect_anomaly_names_op_and_line():
    x = ember.tensor([-1.0, 1.0], requires_grad=True)
    with detect_anomaly(), pytest.raises(FloatingPointError) as e:
        x.sqrt()
    assert "Sqrt" in str(e.value) and "test_autograd.py" in str(e.value)


def test_detect_anomaly_user_frame_in_a_folder_named_ember(tmp_path):
    # A user's project (or a clone of this repository) in a folder named "ember" is still the user's code:
    # "user frame" is decided by the installed package's location, not by "/ember/" in the path.
    script = tmp_path / "ember" / "src" / "ember" / "user_script.py"
    script.parent.mkdir(parents=True)
    script.write_text(
        "import ember\n"
        "from ember.autograd import detect_anomaly\n"
        "x = ember.tensor([-1.0, 1.0], requires_grad=True)\n"
        "with detect_anomaly():\n"
        "    y = x.log()  # the user's line\n"
    )
    with pytest.raises(FloatingPointError) as e:
        runpy.run_path(str(script))
    assert "user_script.py" in str(e.value) and "the user's line" in str(e.value)


def test_no_grad_and_thread_local():
    x = f64(2)
    seen = {}

    def other():
        seen["other"] = ember.is_grad_enabled()

    with ember.no_grad():
        y = x * 2
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert not y.requires_grad and seen["other"] is True


def test_threads_backward_concurrently():
    errors = []

    def work(seed):
        try:
            g = ember.Generator().manual_seed(seed)
            w = ember.randn(16, 16, dtype=ember.float64, generator=g).requires_grad_()
            for _ in range(50):
                w.grad = None
                (w @ w).tanh().sum().backward()
                expected = w.grad.numpy().copy()
                w.grad = None
                (w @ w).tanh().sum().backward()
                np.testing.assert_allclose(w.grad.numpy(), expected)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def _live(kind):
    gc.collect()
    return sum(1 for o in gc.get_objects() if issubclass(type(o), kind))


def test_memory_flat_over_many_steps():
    # a small MLP for 10,000 steps: every graph is freed after its backward
    w1 = ember.randn(8, 8).requires_grad_()
    w2 = ember.randn(8, 1).requires_grad_()
    x = ember.randn(4, 8)

    def step():
        for w in (w1, w2):
            w.grad = None
        ((x @ w1).relu() @ w2).sum().backward()

    for _ in range(100):
        step()
    nodes, tensors = _live(Function), _live(ember.Tensor)
    tracemalloc.start()
    for _ in range(100):
        step()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    for _ in range(9700):
        step()
    tracemalloc.start()
    for _ in range(100):
        step()
    now = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert _live(Function) <= nodes and _live(ember.Tensor) <= tensors
    assert now - base < 50_000


FAST_PATH_CASES = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b.abs() + 1),
    "neg_exp_log": lambda a, b: (-a).exp() + (b.abs() + 1).log(),
    "tanh_sigmoid_relu": lambda a, b: a.tanh() * b.sigmoid() + a.relu(),
    "matmul": lambda a, b: a @ b.T,
    "sum_mean": lambda a, b: a.sum(1, keepdim=True) * b.mean(0),
    "views": lambda a, b: a.reshape(6, 1).permute(1, 0).expand(2, 6) * b.reshape(1, 6),
    "softmax_nll": lambda a, b: (
        ember.nn.functional.cross_entropy(a, ember.tensor([0, 2])) + ember.nn.functional.softmax(b, 1).sum()
    ),
}


@pytest.mark.parametrize("name", sorted(FAST_PATH_CASES))
def test_first_order_fast_path_matches_the_tensor_rules(name):
    # backward() without create_graph uses the ops' array rules; with it, their Tensor rules
    fn = FAST_PATH_CASES[name]
    rng = np.random.default_rng(0)
    a = ember.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    b = ember.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    fast = ember.autograd.grad(fn(a, b).sum(), [a, b])
    slow = ember.autograd.grad(fn(a, b).sum(), [a, b], create_graph=True)
    for f, s in zip(fast, slow, strict=True):
        np.testing.assert_allclose(f.numpy(), s.detach().numpy(), rtol=1e-12, atol=1e-12)
