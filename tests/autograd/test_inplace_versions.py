"""In-place operations make a new version of a tensor's place in the graph (PyTorch's rule).

Nodes recorded before an in-place op keep the edge to the version they consumed; only a node that saved
the overwritten value raises at backward. Writes through views rebase the base's history. The property
test runs random programs mixing in-place and out-of-place ops and views under Ember and PyTorch and
requires equal gradients, or both raising at the same step.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember

X0 = [0.5, -1.0, 2.0, 3.0, -0.25, 1.5]


def _grad(x):
    return np.array(x.grad.tolist())


# -- the three reproductions of issue 14 -----------------------------------------------------------
def test_clone_taken_before_inplace_keeps_old_gradient():
    x = ember.tensor([0.5, -1.0, 2.0], requires_grad=True)
    h = x * 1
    a = h.clone()
    h.mul_(10)
    a.sum().backward()
    np.testing.assert_allclose(_grad(x), [1.0, 1.0, 1.0])


def test_consumer_that_saved_its_output_ignores_later_inplace_on_input():
    x = ember.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = x * 3
    z = y.exp()  # saves its output, not y: changing y later is allowed
    y.mul_(2)
    z.sum().backward()
    np.testing.assert_allclose(_grad(x), 3 * np.exp(3 * np.array([0.5, -1.0, 2.0])))


def test_sum_before_and_after_inplace():
    x = ember.tensor([0.5, -1.0, 2.0], requires_grad=True)
    h = x * 1
    s = h.sum()
    h.mul_(2)
    (s + h.sum()).backward()
    np.testing.assert_allclose(_grad(x), [3.0, 3.0, 3.0])


def test_saved_value_overwritten_raises():
    x = ember.tensor([0.5, -1.0, 2.0], requires_grad=True)
    h = x * 1
    s = h * h
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        s.sum().backward()


def test_mul_by_constant_does_not_need_its_input():
    x = ember.tensor([0.5, -1.0, 2.0], requires_grad=True)
    h = x * 1
    s = h * 4.0  # needs only the constant
    h.add_(1)
    s.sum().backward()
    np.testing.assert_allclose(_grad(x), [4.0, 4.0, 4.0])


# -- views ----------------------------------------------------------------------------------------
def test_write_through_view_updates_base_history():
    x = ember.tensor(X0, requires_grad=True)
    h = x * 2
    h[1:4].mul_(3)
    h.sum().backward()
    np.testing.assert_allclose(_grad(x), [2, 6, 6, 6, 2, 2])


def test_sibling_view_sees_write_through_other_view():
    x = ember.tensor(X0, requires_grad=True)
    h = x * 1
    a, b = h[0:3], h[1:4]
    a.mul_(5)
    (b * b).sum().backward()
    xs = np.array(X0)
    expected = np.zeros(6)
    expected[1:3] = 2 * 25 * xs[1:3]
    expected[3] = 2 * xs[3]
    np.testing.assert_allclose(_grad(x), expected)


def test_view_sees_write_into_base():
    x = ember.tensor(X0, requires_grad=True)
    h = x + 0
    v = h.reshape(2, 3)
    h.mul_(2)
    (v * v).sum().backward()
    np.testing.assert_allclose(_grad(x), 8 * np.array(X0))


def test_write_through_view_of_leaf_raises():
    x = ember.tensor(X0, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf"):
        x[0:2].mul_(2)


def test_write_into_view_of_constant_makes_base_require_grad():
    x = ember.tensor(X0, requires_grad=True)
    z = ember.zeros(6, dtype=ember.float64)
    z[1:3].copy_(x[0:2] * 3)
    assert z.requires_grad
    (z * z).sum().backward()
    np.testing.assert_allclose(_grad(x), [18 * X0[0], 18 * X0[1], 0, 0, 0, 0])


def test_view_gradient_with_create_graph():
    x = ember.tensor(X0, dtype=ember.float64, requires_grad=True)
    h = x * 1
    h[0:3].mul_(x[0:3])  # h[:3] = x[:3] ** 2
    (g,) = ember.autograd.grad((h * h).sum(), x, create_graph=True)  # 4 x^3 on :3, 2x elsewhere
    g.sum().backward()
    xs = np.array(X0)
    np.testing.assert_allclose(_grad(x), np.r_[12 * xs[:3] ** 2, np.full(3, 2.0)])


# -- hooks and retain_grad ------------------------------------------------------------------------
def test_retain_grad_follows_new_version(torch):
    def run(lib):
        x = lib.tensor(X0, dtype=lib.float64, requires_grad=True)
        h = x * 2
        h.retain_grad()
        s = (h * 1).sum()
        h.mul_(3)
        (s + (h * h).sum()).backward()
        return np.array(h.grad.tolist())

    np.testing.assert_allclose(run(ember), run(torch))


def test_hook_registered_before_inplace_stays_with_old_version(torch):
    def run(lib):
        seen = []
        x = lib.tensor(X0, dtype=lib.float64, requires_grad=True)
        h = x * 2
        h.register_hook(lambda g: seen.append(np.array(g.tolist())))
        s = (h * 5).sum()
        h.mul_(3)
        (s + h.sum()).backward()
        return seen

    got, expected = run(ember), run(torch)
    assert len(got) == len(expected) == 1
    np.testing.assert_allclose(got[0], expected[0])


# -- random programs against PyTorch --------------------------------------------------------------
KINDS = [
    "exp",
    "tanh",
    "mul_c",
    "mul",
    "add",
    "div",
    "clone",
    "view",
    "add_",
    "mul_",
    "mul_c_",
    "sub_",
    "div_",
    "copy_",
    "setitem",
    "clamp_",
    "exp_",
    "view_mul_",
    "view2d_add_",
    "retain",
]


def _step(lib, vs, retained, kind, i, j, a, b, c):
    """Apply one step to the list of live tensors ``vs`` (all of shape (6,); the leaves first)."""
    t, u = vs[i % len(vs)], vs[j % len(vs)]
    if kind.endswith("_"):  # in place: on a non-leaf (in-place on leaves is tested above)
        t = vs[2 + i % (len(vs) - 2)]
    lo, hi = min(a, b), max(a, b) + 1
    if kind == "exp":
        vs.append((t * 0.3).exp())
    elif kind == "tanh":
        vs.append(t.tanh())
    elif kind == "mul_c":
        vs.append(t * c)
    elif kind == "mul":
        vs.append(t * u)
    elif kind == "add":
        vs.append(t + u)
    elif kind == "div":
        vs.append(t / (u * u + 1.0))
    elif kind == "clone":
        vs.append(t.clone())
    elif kind == "view":
        vs.append(t[:])
    elif kind == "add_":
        t.add_(u)
    elif kind == "mul_":
        t.mul_(u)
    elif kind == "mul_c_":
        t.mul_(c)
    elif kind == "sub_":
        t.sub_(u * c)
    elif kind == "div_":
        t.div_(u * u + 1.0)
    elif kind == "copy_":
        t.copy_(u * c)
    elif kind == "setitem":
        t[lo:hi] = u[lo:hi] * c
    elif kind == "clamp_":
        t.clamp_(-1.0, 1.5)
    elif kind == "exp_":
        t.mul_(0.3).exp_()
    elif kind == "view_mul_":
        t[lo:hi].mul_(u[lo:hi])
    elif kind == "view2d_add_":
        t.view(2, 3)[a % 2].add_(u.view(2, 3)[b % 2] * c)
    elif kind == "retain" and t.requires_grad:
        t.retain_grad()
        retained.append(t)


def _run(lib, program, second_order=False):
    x = lib.tensor(X0, dtype=lib.float64, requires_grad=True)
    w = lib.tensor([1.0, -0.5, 0.25, 2.0, 0.75, -1.25], dtype=lib.float64, requires_grad=True)
    vs = [x, w, x * 1, w * 1]
    retained = []
    for n, step in enumerate(program):
        try:
            _step(lib, vs, retained, *step)
        except RuntimeError:
            return ("raised at step", n)
    loss = sum(((v * (k + 1)) * v).sum() for k, v in enumerate(vs))
    try:
        if second_order:  # differentiate the gradient's norm: the backward graph, in-place ops included
            gx, gw = lib.autograd.grad(loss, [x, w], create_graph=True)
            loss = (gx * gx).sum() + (gw * gw).sum()
            retained = []
        loss.backward()
    except RuntimeError:
        return ("raised at backward",)
    grads = [np.array(x.grad.tolist()), np.array(w.grad.tolist())]
    grads += [np.array(r.grad.tolist()) if r.grad is not None else None for r in retained]
    return loss.item(), grads


steps = st.tuples(
    st.sampled_from(KINDS),
    st.integers(0, 30),
    st.integers(0, 30),
    st.integers(0, 5),
    st.integers(0, 5),
    st.sampled_from([-1.5, 0.5, 2.0]),
)


def _compare(got, expected):
    if isinstance(expected[0], str) or isinstance(got[0], str):
        assert got == expected
        return
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-10)
    assert len(got[1]) == len(expected[1])
    for g, e in zip(got[1], expected[1]):
        if e is None or g is None:
            assert g is None and e is None
        else:
            np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12, equal_nan=True)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(steps, min_size=1, max_size=10))
def test_random_inplace_programs_match_torch(program):
    torch = pytest.importorskip("torch")
    _compare(_run(ember, program), _run(torch, program))


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(steps, min_size=1, max_size=8))
def test_random_inplace_programs_second_order_match_torch(program):
    torch = pytest.importorskip("torch")
    _compare(_run(ember, program, second_order=True), _run(torch, program, second_order=True))


def test_where_condition_changed_in_place_raises_as_in_torch(torch):
    """``where``'s backward reads its condition: changing it in place after forward is an error (PyTorch's
    version check); changing a chosen operand is not (only its shape is used)."""
    for lib in (ember, torch):
        x = lib.tensor(X0)
        a = lib.tensor(X0, requires_grad=True)
        b = lib.tensor(X0, requires_grad=True)
        c = x > 0
        y = lib.where(c, a * 1, b * 1)
        c.logical_not_()
        with pytest.raises(RuntimeError, match=r"modified by an in.?place operation"):
            y.sum().backward()
        a2 = a * 1
        y = lib.where(x > 0, a2, b * 1)
        a2.mul_(2)
        y.sum().backward()
        assert a.grad.tolist() == [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
