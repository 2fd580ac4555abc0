"""In-place view methods (``t_``, ``transpose_``, ``swapaxes_``, ``swapdims_``, ``squeeze_``, ``unsqueeze_``,
``as_strided_``, ``ember.as_strided_``) beside PyTorch's: the same code run under both libraries gives the same
shapes, values, storage sharing with bases and views, version counts, gradients and refusals."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing import check_op

torch = pytest.importorskip("torch")

R = np.random.RandomState(3)
A23 = R.randn(2, 3)
A2131 = R.randn(2, 1, 3, 1)

# (method, args, input): each is checked as ``(x * 1).method(*args)`` and through a view ``(x * 1)[...]``
CASES = [
    ("t_", (), A23),
    ("t_", (), R.randn(4)),
    ("transpose_", (0, 1), A23),
    ("transpose_", (-1, 0), R.randn(2, 3, 4)),
    ("swapaxes_", (1, 2), R.randn(2, 3, 4)),
    ("swapdims_", (0, 2), R.randn(2, 3, 4)),
    ("squeeze_", (), A2131),
    ("squeeze_", (1,), A2131),
    ("squeeze_", (0,), A2131),
    ("squeeze_", ((1, 3),), A2131),
    ("squeeze_", (-1,), A2131),
    ("unsqueeze_", (0,), A23),
    ("unsqueeze_", (-1,), A23),
    ("unsqueeze_", (1,), A23),
    ("as_strided_", ((2, 2), (1, 2), 1), R.randn(6)),
    ("as_strided_", ((3, 2), (2, 1)), A23),
]


@pytest.mark.parametrize(("name", "args", "x"), CASES, ids=[f"{c[0]}{c[1]}" for c in CASES])
def test_on_a_result_values_and_gradients_match_torch(name, args, x):
    def fn(lib):
        def run(t):
            y = t * 1
            out = getattr(y, name)(*args)
            assert out is y
            return out * 2

        return run

    check_op(fn(ember), x, torch_fn=fn(torch), name=name)


@pytest.mark.parametrize(("name", "args", "x"), CASES[:-2], ids=[f"{c[0]}{c[1]}" for c in CASES[:-2]])
def test_on_a_view_values_and_gradients_match_torch(name, args, x):
    def fn(t):
        base = t * 1
        v = base[:]  # a view of base
        getattr(v, name)(*args)
        v.mul_(3)  # a write through the changed view reaches base
        return base * 1, v * 1

    check_op(fn, x, torch_fn=fn, name=name)


def _scenario(lib):
    out = []
    x = lib.arange(6.0).reshape(2, 3)
    v0 = x._version
    x.t_()
    out += [tuple(x.shape), tuple(x.stride()), x.is_contiguous(), x._version - v0, x.tolist()]
    x.transpose_(0, 1).unsqueeze_(0).squeeze_()
    out += [tuple(x.shape), x._version - v0]
    # a view: its base sees no metadata change, but writes still share storage
    base = lib.arange(6.0).reshape(2, 3)
    v = base[1]
    v.unsqueeze_(0)
    v.mul_(10)
    out += [tuple(v.shape), tuple(base.shape), base.tolist(), base._version == v._version]
    base.add_(1)
    out.append(v.tolist())
    # a root whose views were taken before its metadata changed
    r = lib.arange(6.0).reshape(2, 3)
    w = r[0]
    r.t_()
    w.fill_(-1)
    out += [r.tolist(), w.tolist()]
    r.mul_(2)
    out.append(w.tolist())
    # squeeze_ without a size-1 dim and t_ of a vector still bump the version
    s = lib.zeros(3)
    s0 = s._version
    s.squeeze_()
    s.t_()
    out.append(s._version - s0)
    y = lib.arange(6.0)
    z = lib.as_strided_(y, (2, 2), (2, 1))
    out += [z is y, y.tolist()]
    return out


def test_shapes_storage_and_versions_match_torch():
    t, e = _scenario(torch), _scenario(ember)
    assert t == e


def _grads(lib):
    out = []
    a = lib.tensor(A23, requires_grad=True)
    b = a * 1
    w = b[1]
    b.t_()  # a root with a view taken before: writes through the view rebase the new view's history
    w.mul_(10)
    (b * lib.arange(6.0, dtype=lib.float64).reshape(3, 2)).sum().backward()
    out.append(a.grad.tolist())
    a = lib.tensor(A23, requires_grad=True)
    b = a * 1
    v = b[0]
    v.unsqueeze_(1)
    v.mul_(lib.tensor([[1.0], [2.0], [3.0]], dtype=lib.float64))
    b.sum().backward()
    out.append(a.grad.tolist())
    a = lib.tensor(A23, requires_grad=True)
    b = a * 2
    b.t_()
    b.retain_grad()
    (b * b).sum().backward()
    out += [a.grad.tolist(), b.grad.shape == (3, 2), b.grad_fn is not None]
    # a tensor saved for backward, then changed in place: the version check refuses
    a = lib.tensor(A23, requires_grad=True)
    b = a * 1
    c = b.sin()
    b.unsqueeze_(0)
    with pytest.raises(RuntimeError, match=r"modified (by an )?in[- ]?place"):
        c.sum().backward()
    b = a.exp()  # exp saves its output: changing it in place is refused as well
    b.t_()
    with pytest.raises(RuntimeError, match=r"modified (by an )?in[- ]?place"):
        b.sum().backward()
    return out


def test_gradients_through_in_place_views_match_torch():
    t, e = _grads(torch), _grads(ember)
    np.testing.assert_allclose(t[0], e[0])
    np.testing.assert_allclose(t[1], e[1])
    np.testing.assert_allclose(t[2], e[2])
    assert t[3:] == e[3:]


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.t_(),
        lambda x: x.transpose_(0, 1),
        lambda x: x.swapaxes_(0, 1),
        lambda x: x.swapdims_(0, 1),
        lambda x: x.squeeze_(),
        lambda x: x.unsqueeze_(0),
        lambda x: x.as_strided_((3,), (1,)),
    ],
)
def test_a_leaf_that_requires_grad_is_refused_as_in_torch(lib, call):
    x = lib.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        call(x)
    with pytest.raises(RuntimeError, match="leaf"):
        call(x[0:2])  # a view of that leaf
    with lib.no_grad():
        call(x)  # allowed without grad: it stays a leaf that requires grad
    assert x.is_leaf and x.requires_grad
    (x * 2).sum().backward()
    assert tuple(x.grad.shape) == tuple(x.shape)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_bad_dims_raise_like_torch(lib):
    with pytest.raises(IndexError):
        lib.zeros(2, 3).transpose_(0, 2)
    with pytest.raises(IndexError):
        lib.zeros(2, 3).unsqueeze_(3)
    with pytest.raises(RuntimeError):
        lib.zeros(2, 3, 4).t_()
    with pytest.raises(RuntimeError):
        lib.zeros(6).as_strided_((3, 3), (3, 1))


def test_in_place_views_replay_bit_identically_under_compile():
    def step(x):
        y = x * 2
        y.t_()
        y.unsqueeze_(0)
        return (y * ember.arange(6.0).reshape(1, 3, 2)).sum(0)

    x = ember.tensor(A23)
    eager = step(x).numpy()
    compiled = ember.compile(step)
    for _ in range(3):
        assert np.array_equal(compiled(x).numpy(), eager)
