"""``ember.autograd.forward_ad``: tangents of every kind of operator equal PyTorch's forward AD and float64 central
finite differences; in-place and view cases, tangents tracked by reverse mode, levels and errors run the same way
under both libraries; ``ember.func.jvp``/``jacfwd`` agree."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4))
W = rng.standard_normal((4, 5))
V = rng.standard_normal(4)
IMG = rng.standard_normal((1, 2, 5, 5))
K = rng.standard_normal((3, 2, 3, 3))
Q = rng.standard_normal((2, 3, 4))

# name -> (function of the dual inputs, the inputs)
CASES = {
    "exp": (lambda L, x: x.exp(), (X,)),
    "log": (lambda L, x: (x.abs() + 1).log(), (X,)),
    "tanh": (lambda L, x: x.tanh(), (X,)),
    "sigmoid": (lambda L, x: L.sigmoid(x), (X,)),
    "sqrt": (lambda L, x: (x * x + 1).sqrt(), (X,)),
    "relu": (lambda L, x: L.relu(x), (X,)),
    "gelu": (lambda L, x: L.nn.functional.gelu(x), (X,)),
    "pow": (lambda L, x: x**3, (X,)),
    "clamp": (lambda L, x: x.clamp(-0.5, 0.5), (X,)),
    "mul_broadcast": (lambda L, x, v: x * v, (X, V)),
    "div_broadcast": (lambda L, x, v: x / (v.abs() + 1), (X, V)),
    "sub_broadcast": (lambda L, x, v: x - v, (X, V)),
    "maximum": (lambda L, x, v: L.maximum(x, v), (X, V)),
    "atan2": (lambda L, x, v: L.atan2(x, v), (X, V)),
    "pow_tensor": (lambda L, x, v: (x.abs() + 1) ** v, (X, V)),
    "sum": (lambda L, x: x.sum(1), (X,)),
    "mean": (lambda L, x: x.mean(), (X,)),
    "var": (lambda L, x: x.var(1), (X,)),
    "amax": (lambda L, x: x.amax(1), (X,)),
    "max_dim": (lambda L, x: L.max(x, 0)[0], (X,)),
    "logsumexp": (lambda L, x: L.logsumexp(x, 1), (X,)),
    "norm": (lambda L, x: L.linalg.vector_norm(x), (X,)),
    "prod": (lambda L, x: x.prod(1), (X,)),
    "cumsum": (lambda L, x: x.cumsum(1), (X,)),
    "sort": (lambda L, x: L.sort(x, 1)[0], (X,)),
    "topk": (lambda L, x: L.topk(x, 2, 1)[0], (X,)),
    "matmul": (lambda L, x, w: x @ w, (X, W)),
    "linear": (lambda L, x, w, b: L.nn.functional.linear(x, w.T, b), (X, W, rng.standard_normal(5))),
    "bmm": (lambda L, a, b: L.bmm(a, b), (rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 2)))),
    "transpose": (lambda L, x: x.T * 2, (X,)),
    "reshape": (lambda L, x: x.reshape(12), (X,)),
    "slice": (lambda L, x: x[1:, ::2], (X,)),
    "index_list": (lambda L, x: x[[0, 2, 0]], (X,)),
    "gather": (lambda L, x: x.gather(1, L.tensor([[0, 3], [1, 1], [2, 0]])), (X,)),
    "index_select": (lambda L, x: L.index_select(x, 1, L.tensor([3, 0])), (X,)),
    "cat": (lambda L, x, w: L.cat([x, w.T[:, :4]], 0), (X, W)),
    "stack": (lambda L, x, v: L.stack([x[0], v], 1), (X, V)),
    "expand": (lambda L, v: v.expand(3, 4) * 1, (V,)),
    "permute_unsqueeze": (lambda L, x: x.unsqueeze(0).permute(2, 0, 1).squeeze(1), (X,)),
    "where": (lambda L, x, v: L.where(x > 0, x, v), (X, V)),
    "masked_fill": (lambda L, x: x.masked_fill(x < 0, 2.0), (X,)),
    "softmax": (lambda L, x: L.softmax(x, 1), (X,)),
    "log_softmax": (lambda L, x: L.log_softmax(x, 0), (X,)),
    "conv2d": (lambda L, x, k: L.nn.functional.conv2d(x, k, padding=1), (IMG, K)),
    "max_pool2d": (lambda L, x: L.nn.functional.max_pool2d(x, 2), (IMG,)),
    "layer_norm": (
        lambda L, x, w, b: L.nn.functional.layer_norm(x, (4,), w, b),
        (X, rng.standard_normal(4), rng.standard_normal(4)),
    ),
    "cross_entropy": (lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([1, 0, 3])), (X,)),
    "mse_loss": (lambda L, x, v: L.nn.functional.mse_loss(x, v.expand(3, 4)), (X, V)),
    "split": (lambda L, x: x.split(2, 1)[1] * 1, (X,)),
    "einsum": (lambda L, a, b: L.einsum("ij,jk->ik", a, b), (X, W)),
    "embedding": (lambda L, w: L.nn.functional.embedding(L.tensor([[0, 2], [1, 1]]), w), (X,)),
    "sdpa": (lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v), (Q, Q + 0.1, Q * 2)),
    "batch_norm": (lambda L, x, w, b: L.nn.functional.batch_norm(x, None, None, w, b, training=True), (X, V, V + 1)),
    "group_norm": (lambda L, x: L.nn.functional.group_norm(x.reshape(1, 4, 3), 2), (X,)),
    "avg_pool2d": (lambda L, x: L.nn.functional.avg_pool2d(x, 2), (IMG,)),
    "interpolate": (
        lambda L, x: L.nn.functional.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
        (IMG,),
    ),
    "cumprod": (lambda L, x: x.cumprod(1), (X,)),
    "det": (lambda L, x: L.linalg.det(x[:, :3]), (X,)),
    "inv": (lambda L, x: L.linalg.inv(x[:, :3] + 3 * L.eye(3, dtype=L.float64)), (X,)),
    "solve": (lambda L, x, b: L.linalg.solve(x[:, :3] + 3 * L.eye(3, dtype=L.float64), b[:3]), (X, V)),
    "lerp": (lambda L, a, b: L.lerp(a, b, 0.3), (X, X * 2)),
    "addmm": (lambda L, c, a, b: L.addmm(c, a, b), (rng.standard_normal((3, 5)), X, W)),
    "flip_roll": (lambda L, x: L.roll(L.flip(x, [0]), 1, 1), (X,)),
    "tril_diag_embed": (lambda L, x: L.tril(x) + L.diag_embed(x[0])[:3], (X,)),
    "repeat": (lambda L, x: x.repeat(2, 1), (X,)),
    "pad": (lambda L, x: L.nn.functional.pad(x, (1, 2)), (X,)),
    "nll_loss": (lambda L, x: L.nn.functional.nll_loss(L.log_softmax(x, 1), L.tensor([0, 1, 3])), (X,)),
    "bce_with_logits": (
        lambda L, x: L.nn.functional.binary_cross_entropy_with_logits(x, L.full((3, 4), 0.3, dtype=L.float64)),
        (X,),
    ),
    "sub_inplace": (lambda L, x: x.clone().sub_(x * 2), (X,)),
}


def _tangents(arrays, seed=1):
    r = np.random.default_rng(seed)
    return [r.standard_normal(a.shape) for a in arrays]


def _forward_ad(lib, f, arrays, tangents):
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        duals = [
            fw.make_dual(lib.tensor(a, dtype=lib.float64), lib.tensor(t, dtype=lib.float64))
            for a, t in zip(arrays, tangents, strict=True)
        ]
        y = f(lib, *duals)
        p, t = fw.unpack_dual(y)
        assert t is not None
        return p.detach().numpy(), t.detach().numpy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_tangents_match_torch_and_finite_differences(name):
    f, arrays = CASES[name]
    tangents = _tangents(arrays)
    got_p, got_t = _forward_ad(ember, f, arrays, tangents)
    want_p, want_t = _forward_ad(torch, f, arrays, tangents)
    np.testing.assert_allclose(got_p, want_p, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_t, want_t, rtol=1e-9, atol=1e-11)
    eps = 1e-6

    def at(s):
        return f(ember, *[ember.tensor(a + s * t, dtype=ember.float64) for a, t in zip(arrays, tangents, strict=True)])

    fd = (at(eps).numpy() - at(-eps).numpy()) / (2 * eps)
    np.testing.assert_allclose(got_t, fd, rtol=1e-5, atol=1e-6)


def test_func_jvp_and_jacfwd_agree_with_forward_ad():
    f, arrays = CASES["layer_norm"]
    tangents = _tangents(arrays, 2)
    _, t = _forward_ad(ember, f, arrays, tangents)
    prim = tuple(ember.tensor(a, dtype=ember.float64) for a in arrays)
    tans = tuple(ember.tensor(a, dtype=ember.float64) for a in tangents)
    _, jt = ember.func.jvp(lambda *a: f(ember, *a), prim, tans)
    np.testing.assert_allclose(jt.numpy(), t, rtol=1e-10, atol=1e-12)
    jac = ember.func.jacfwd(lambda x: f(ember, x, prim[1], prim[2]))(prim[0])
    np.testing.assert_allclose(
        np.tensordot(jac.numpy(), tangents[0], axes=2),
        _forward_ad(ember, f, arrays, [tangents[0], 0 * tangents[1], 0 * tangents[2]])[1],
        rtol=1e-10,
        atol=1e-12,
    )


def _inplace_and_views(lib):
    fw = lib.autograd.forward_ad
    out = []
    x = lib.tensor([0.5, 1.0, 2.0, -1.0], dtype=lib.float64)
    t = lib.tensor([1.0, -1.0, 0.5, 2.0], dtype=lib.float64)
    with fw.dual_level():
        d = fw.make_dual(x, t)
        e = d * 1
        e.mul_(2)  # in place on a dual tensor
        out.append(fw.unpack_dual(e).tangent.tolist())
        e.sin_()
        out.append(fw.unpack_dual(e).tangent.tolist())
        f = d.exp()
        v = f[1:3]
        w = f[::2]
        v.mul_(3)  # through a view: the base's tangent and another view's change
        out += [fw.unpack_dual(f).tangent.tolist(), fw.unpack_dual(w).tangent.tolist()]
        g = lib.zeros(4, dtype=lib.float64)
        g[1:3] = d[:2] * 2  # a plain tensor written with a dual value: it becomes dual
        out.append(fw.unpack_dual(g).tangent.tolist())
        h = lib.zeros(4, dtype=lib.float64)
        h.copy_(d)
        out.append(fw.unpack_dual(h).tangent.tolist())
        h.zero_()
        out.append(fw.unpack_dual(h).tangent.tolist())
        d.add_(1)  # the dual made by make_dual: its tangent is the caller's tangent, updated in place
        out.append(t.tolist())
        d.mul_(2)
        out += [t.tolist(), x.tolist()]
        out.append(fw.unpack_dual(d.detach()).tangent)  # detach() drops the tangent
        out.append(fw.unpack_dual(x).tangent)  # the primal itself is not dual
        p, tt = fw.unpack_dual(d)
        out += [tt is t, fw.unpack_dual(p).tangent]
        with lib.no_grad():  # grad mode does not stop forward AD
            out.append(fw.unpack_dual(d.sin()).tangent.tolist())
    out.append(fw.unpack_dual(d).tangent)  # the level is closed
    return out


def test_inplace_and_view_tangents_match_torch():
    got, want = _inplace_and_views(ember), _inplace_and_views(torch)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        if isinstance(g, list):
            np.testing.assert_allclose(g, w, rtol=1e-12)
        else:
            assert g == w


def _tracked(lib):
    fw = lib.autograd.forward_ad
    x = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
    t = lib.tensor([1.0, -1.0, 0.5], dtype=lib.float64, requires_grad=True)
    with fw.dual_level():
        d = fw.make_dual(x, t)
        y = (d.sin() * d).sum()
        _, jt = fw.unpack_dual(y)
        plain = fw.unpack_dual(fw.make_dual(x.detach(), t.detach()).exp()).tangent
    assert jt.requires_grad and not plain.requires_grad
    gx, gt = lib.autograd.grad(jt, (x, t))  # forward-over-reverse: d(J t)/dx = H t, d(J t)/dt = J
    return jt.item(), gx.tolist(), gt.tolist()


def test_tangents_tracked_by_reverse_mode_match_torch():
    got, want = _tracked(ember), _tracked(torch)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12)


def test_random_operators_use_the_draw_of_their_call():
    fw = ember.autograd.forward_ad
    x = ember.tensor(rng.standard_normal(1000) + 5)
    with fw.dual_level():
        d = fw.make_dual(x, ember.ones(1000))
        y = ember.nn.functional.dropout(d, 0.5)
        p, t = fw.unpack_dual(y)
    np.testing.assert_allclose(t.numpy(), p.numpy() / x.numpy(), rtol=1e-5)  # the same mask, times 1/(1-p)
    assert 300 < int((t.numpy() == 0).sum()) < 700


@LIBS
def test_levels_and_errors(lib):
    fw = lib.autograd.forward_ad
    x = lib.ones(3)
    with pytest.raises(RuntimeError, match="no level exists"):
        fw.make_dual(x, x)
    assert fw.unpack_dual(x).tangent is None and fw.unpack_dual(x).primal is x
    with fw.dual_level() as level:
        assert level == 0
        with pytest.raises(RuntimeError, match="Nested forward mode AD"):
            fw.enter_dual_level()
        with pytest.raises(RuntimeError, match="different size"):
            fw.make_dual(x, lib.ones(2))
        with pytest.raises(ValueError, match="floating point"):
            fw.make_dual(lib.tensor([1, 2]), lib.ones(2))
        assert isinstance(fw.unpack_dual(fw.make_dual(x, x)), fw.UnpackedDualTensor)
    assert fw.enter_dual_level() == 0
    fw.exit_dual_level(level=0)


def test_nothing_is_wrapped_outside_a_level():
    from ember.autograd._function import TRACE
    from ember.ops import _inplace

    assert TRACE[0] is None
    with ember.autograd.forward_ad.dual_level():
        assert TRACE[0] is not None
        with pytest.raises(RuntimeError, match="already intercepted"), ember.profiler.profile():
            pass  # one interceptor at a time: a profile refuses to start inside a dual level
    assert TRACE[0] is None and _inplace.FWD[0] is None


def _batch_norm_module(lib):
    fw = lib.autograd.forward_ad
    lib.manual_seed(0)
    bn = lib.nn.BatchNorm1d(4).double()
    with fw.dual_level():
        d = fw.make_dual(lib.tensor(X), lib.tensor(X[::-1].copy()))
        _, t = fw.unpack_dual(bn(d))
    # the running statistics are updated once (the tangent run updates nothing)
    return t.detach().numpy(), bn.running_mean.numpy(), bn.running_var.numpy(), int(bn.num_batches_tracked)


def test_batch_norm_module_updates_its_statistics_once():
    got, want = _batch_norm_module(ember), _batch_norm_module(torch)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def _with_saved_hooks(lib):
    fw = lib.autograd.forward_ad
    packed = []
    x = lib.tensor([0.5, 1.0], dtype=lib.float64, requires_grad=True)
    hooks = lib.autograd.graph.saved_tensors_hooks(lambda t: packed.append(tuple(t.shape)) or t, lambda t: t)
    with hooks, fw.dual_level():
        d = fw.make_dual(x, lib.ones(2, dtype=lib.float64))
        y = d.sin()
        _, t = fw.unpack_dual(y)
    y.sum().backward()
    return packed, t.tolist(), x.grad.tolist()


def test_saved_tensor_hooks_see_only_the_programs_operators():
    """The operators Ember runs to compute tangents save nothing through the program's hooks."""
    got, want = _with_saved_hooks(ember), _with_saved_hooks(torch)
    assert len(got[0]) == 1
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12)
