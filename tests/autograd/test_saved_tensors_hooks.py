"""``ember.autograd.graph.saved_tensors_hooks`` / ``save_on_cpu`` / ``disable_saved_tensors_hooks``: every value a
node saves for backward (built-in operators' included) goes through the hooks; the same code runs under PyTorch."""

import threading

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _x(lib, shape=(2, 3, 6, 6), seed=0, requires_grad=True):
    g = np.random.default_rng(seed)
    return lib.tensor(g.standard_normal(shape), requires_grad=requires_grad)


# per case: what is computed from x (2, 3, 6, 6) and w (4, 3, 3, 3); the number of saved tensors is PyTorch's
CASES = {
    "exp": lambda L, x, w: x.exp(),
    "sin": lambda L, x, w: x.sin(),
    "mul": lambda L, x, w: x * x.exp(),
    "mul_scalar": lambda L, x, w: x * 2.0,
    "add": lambda L, x, w: x + w.sum(),
    "tanh": lambda L, x, w: x.tanh(),
    "pow": lambda L, x, w: x.pow(2),
    "softmax": lambda L, x, w: L.softmax(x, 1),
    "log_softmax": lambda L, x, w: L.log_softmax(x, 1),
    "relu": lambda L, x, w: L.relu(x),
    "sigmoid": lambda L, x, w: L.sigmoid(x),
    "layer_norm": lambda L, x, w: L.nn.functional.layer_norm(x, (6,)),
    "cross_entropy": lambda L, x, w: L.nn.functional.cross_entropy(x.reshape(2, -1), L.tensor([1, 3])),
    "matmul": lambda L, x, w: x.reshape(36, 6) @ w.reshape(6, 18),
    "linear": lambda L, x, w: L.nn.functional.linear(x.reshape(18, 12), w.reshape(9, 12), w.reshape(-1)[:9]),
    "gather": lambda L, x, w: x.reshape(2, -1).gather(1, L.tensor([[0, 5], [3, 2]])),
    "index": lambda L, x, w: x[:, 1],
    "sum": lambda L, x, w: x.sum(1),
    "amax": lambda L, x, w: x.amax(1),
    "div": lambda L, x, w: x / (w.sum() + 10),
    "sqrt": lambda L, x, w: (x * x).sqrt(),
}
# as many saved tensors as PyTorch, of other shapes: layer norm's per-row statistics flattened, the transposed
# weight of linear, gather's input
SAVED_OTHER_SHAPES = {"layer_norm", "linear", "gather"}
# where Ember saves another set of values than PyTorch (same gradients): conv2d keeps the unfolded input columns
# it computed forward with; var, gelu, batch norm (its normalised input) and max-pool (on torch, its output) keep an
# intermediate, per backend
OTHER_COUNTS = {
    "conv2d": lambda L, x, w: L.nn.functional.conv2d(x, w),
    "var": lambda L, x, w: x.var(1),
    "max_pool2d": lambda L, x, w: L.nn.functional.max_pool2d(x, 2),
    "batch_norm": lambda L, x, w: L.nn.functional.batch_norm(x, None, None, training=True),
    "gelu": lambda L, x, w: L.nn.functional.gelu(x),
    "dropout": lambda L, x, w: L.nn.functional.dropout(x, 0.5),
}


def _run(lib, f, hooks=True, pack=None, unpack=None):
    calls = {"pack": [], "unpack": 0}

    def _pack(t):
        calls["pack"].append(tuple(t.shape))
        return pack(t) if pack else t

    def _unpack(p):
        calls["unpack"] += 1
        return unpack(p) if unpack else p

    lib.manual_seed(0)
    x, w = _x(lib), _x(lib, (4, 3, 3, 3), 1)
    if hooks:
        with lib.autograd.graph.saved_tensors_hooks(_pack, _unpack):
            y = f(lib, x, w)
    else:
        y = f(lib, x, w)
    assert calls["unpack"] == 0  # unpacked only in backward
    (y * y).sum().backward() if y.numel() > 1 else y.backward()
    return calls, y.detach().numpy(), x.grad.numpy(), None if w.grad is None else w.grad.numpy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_hooks_see_what_pytorch_saves_and_gradients_match(name):
    f = CASES[name]
    got, want = _run(ember, f), _run(torch, f)
    assert len(got[0]["pack"]) == len(want[0]["pack"])
    if name not in SAVED_OTHER_SHAPES:
        assert sorted(got[0]["pack"]) == sorted(want[0]["pack"])
    assert got[0]["unpack"] == len(got[0]["pack"]) == want[0]["unpack"]
    for a, b in zip(got[1:], want[1:], strict=True):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(OTHER_COUNTS) + sorted(CASES))
def test_packed_copies_give_the_gradients_without_hooks(name, monkeypatch):
    """Hooks that keep copies (``save_on_cpu``'s way): each saved value is packed once, unpacked once, and the
    gradients are those of the run without hooks, bit for bit (on CUDA with cuDNN's deterministic algorithms, as
    PyTorch's reproducibility needs: an algorithm summing with atomics may round otherwise from call to call)."""
    if ember.get_default_device().type == "cuda":
        monkeypatch.setattr(ember.backends.cudnn, "deterministic", True)
    f = {**CASES, **OTHER_COUNTS}[name]
    got = _run(ember, f, pack=lambda t: ("copy", t.detach().clone()), unpack=lambda p: p[1])
    ref = _run(ember, f, hooks=False)
    assert got[0]["unpack"] == len(got[0]["pack"])
    for a, b in zip(got[1:], ref[1:], strict=True):
        if b is not None:
            np.testing.assert_array_equal(a, b)


def test_every_saved_array_is_read_back_from_the_hooks():
    """Unpacking scaled values changes every gradient that reads a saved value (layer norm's mean and rstd,
    max-pool's indices, the saved input): none is read from the node's own copy."""

    def f(lib, x, w):
        return lib.nn.functional.layer_norm(x, (6,)).exp()

    plain = _run(ember, f, hooks=False)
    for lib in (ember, torch):
        # unpack gives back zeros: every gradient through a saved value vanishes (exp reads its output)
        got = _run(lib, f, pack=lambda t: t.detach().clone(), unpack=lambda p: p * 0)
        assert np.abs(got[2]).max() == 0
    assert np.abs(plain[2]).max() > 0


def _scenario(lib):
    log = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    # the hooks receive the saved tensor itself (a leaf input, an output)
    seen = []
    with lib.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t) or t, lambda t: t):
        y1 = x.sin()
        y2 = x.exp()
    assert seen[0] is x and seen[1] is y2 and len(seen) == 2
    (y1 + y2).sum().backward()
    out = [x.grad.tolist()]
    # unpack decides what backward reads
    x.grad = None
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 10):
        y = x.sin()
    y.sum().backward()
    out.append(x.grad.tolist())
    # nesting: the innermost pair
    with lib.autograd.graph.saved_tensors_hooks(lambda t: ("outer", t), lambda p: p[1]):
        with lib.autograd.graph.saved_tensors_hooks(lambda t: ("inner", t), lambda p: (log.append(p[0]), p[1])[1]):
            y = x.sin()
        z = x.cos()
    with lib.autograd.graph.saved_tensors_hooks(lambda t: log.append("pack") or t, lambda t: t), lib.no_grad():
        x.sin()  # nothing saved
    (y.sum() + z.sum()).backward()
    out.append(list(log))
    log.clear()
    # entered under no_grad, used with grad mode on: packs; the hooks run with grad mode off
    with (
        lib.no_grad(),
        lib.autograd.graph.saved_tensors_hooks(
            lambda t: log.append(("pack", lib.is_grad_enabled())) or t,
            lambda t: log.append(("unpack", lib.is_grad_enabled())) or t,
        ),
        lib.enable_grad(),
    ):
        y = x.sin()
    y.sum().backward(retain_graph=True)
    y.sum().backward()  # unpacked again
    out.append(list(log))
    log.clear()
    # per thread: another thread's operators are not packed
    with lib.autograd.graph.saved_tensors_hooks(lambda t: log.append("pack") or t, lambda t: t):
        th = threading.Thread(target=lambda: x.cos())
        th.start()
        th.join()
    out.append(list(log))
    # a saved leaf packed as a copy, then differentiated twice (create_graph)
    x.grad = None
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
        y = (x**3).sum()
    (g,) = lib.autograd.grad(y, x, create_graph=True)
    g.sum().backward()
    out.append(x.grad.tolist())
    # save_on_cpu: copies in host memory (pin_memory accepted)
    x.grad = None
    with lib.autograd.graph.save_on_cpu(pin_memory=True):
        y = (x * x.exp()).sum()
    y.backward()
    out.append(x.grad.tolist())
    # a copy packed, then the tensor written in place: backward reads the saved (old) value
    x.grad = None
    a = x * 1
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        b = a.sin()
    with lib.no_grad():
        a.add_(1)
    b.sum().backward()
    out.append(x.grad.tolist())
    return out


def test_hook_semantics_match_torch():
    got, want = _scenario(ember), _scenario(torch)
    for g, w in zip(got, want, strict=True):
        if isinstance(g, list) and g and isinstance(g[0], float):
            np.testing.assert_allclose(g, w, rtol=1e-6)
        else:
            assert g == w


class _Cube:
    @staticmethod
    def make(lib):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a**3

            @staticmethod
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                return 3 * a**2 * g

        return Cube


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_custom_function_saved_tensors(lib):
    log = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(
        lambda t: log.append("pack") or ("p", t), lambda p: log.append("u") or p[1]
    ):
        y = _Cube.make(lib).apply(x)
    assert log == ["pack"]
    y.sum().backward()
    assert log == ["pack", "u"]
    assert x.grad.tolist() == [3.0, 12.0]


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_errors(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    graph = lib.autograd.graph
    with (
        pytest.raises(RuntimeError, match="no hooks here"),
        graph.disable_saved_tensors_hooks("no hooks here"),
        graph.saved_tensors_hooks(lambda t: t, lambda t: t),
    ):
        pass
    with graph.disable_saved_tensors_hooks("no hooks here"):
        x.sin()  # no hooks: fine
    with (
        pytest.raises(RuntimeError, match="not now"),
        graph.saved_tensors_hooks(lambda t: t, lambda t: t),
        graph.disable_saved_tensors_hooks("not now"),
    ):
        pass
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t):  # usable again after both blocks
        y = x.sin()
    with graph.saved_tensors_hooks(lambda t: t, lambda t: 3):
        y = x.sin()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        y.sum().backward()


def test_packed_tensor_itself_written_in_place_is_refused():
    """Divergence from PyTorch: when the pack hook keeps the tensor itself and it is then written in place,
    PyTorch's backward silently reads the new value (a wrong gradient); Ember refuses it, as without hooks."""
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        b = a.sin()
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        b.sum().backward()


def test_packed_values_are_dropped_with_the_graph():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: ("p", t.clone()), lambda p: p[1]):
        y = x.sin()
    node = y.grad_fn
    y.sum().backward()
    assert node._extra.packed is None
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()


def _double_backward_non_leaf(lib):
    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone() * 1, lambda t: t):
        a = x * 2
        y = (a**3).sum() + (a.exp() * x).sum()
    (g,) = lib.autograd.grad(y, x, create_graph=True)
    g.sum().backward()
    return g.tolist(), x.grad.tolist()


def test_unpacked_copies_of_non_leaves_keep_their_history_for_double_backward():
    got, want = _double_backward_non_leaf(ember), _double_backward_non_leaf(torch)
    np.testing.assert_allclose(got, want, rtol=1e-12)
