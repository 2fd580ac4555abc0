"""``ember.autograd.graph``: ``Node`` (name, next_functions, metadata, hooks), ``GradientEdge`` /
``get_gradient_edge`` (also as an input of ``autograd.grad``), ``increment_version`` and
``register_multi_grad_hook``; the same code runs under PyTorch."""

import re

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])


def _name(node):
    return None if node is None else re.sub(r"\d+$", "", node.name())


def _structure(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0], requires_grad=True)
    c = lib.tensor([5.0, 6.0])
    m = a * b
    y = lib.sum(m + c)
    fn = y.grad_fn
    assert isinstance(fn, lib.autograd.graph.Node)
    assert isinstance(m.grad_fn, lib.autograd.graph.Node)
    add = fn.next_functions[0][0]
    out = [_name(fn), [(_name(n), i) for n, i in fn.next_functions]]
    out.append([(_name(n), i) for n, i in add.next_functions])
    mul = add.next_functions[0][0]
    accs = [n for n, _ in mul.next_functions]
    out.append([_name(n) for n in accs])
    assert accs[0].variable is a and accs[1].variable is b
    assert mul.next_functions[0][0] is accs[0]  # the same AccumulateGrad while the leaf lives
    assert isinstance(accs[0], lib.autograd.graph.Node)
    fn.metadata["k"] = 1
    assert y.grad_fn.metadata == {"k": 1}
    return out


def test_node_structure_matches_torch():
    assert _structure(ember) == _structure(torch)


def _node_hooks(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0], requires_grad=True)
    m = a * b
    seen = []

    def pre(grad_outputs):
        seen.append(("pre", [g.tolist() for g in grad_outputs]))
        return (grad_outputs[0] * 2,)

    def post(grad_inputs, grad_outputs):
        seen.append(("post", [g.tolist() for g in grad_inputs], [g.tolist() for g in grad_outputs]))
        return (grad_inputs[0] + 1, grad_inputs[1])

    h1 = m.grad_fn.register_prehook(pre)
    h2 = m.grad_fn.register_hook(post)
    (m * m).sum().backward(retain_graph=True)
    out = [seen[:], a.grad.tolist(), b.grad.tolist()]
    h1.remove()
    h2.remove()
    a.grad = b.grad = None
    seen.clear()
    (m * m).sum().backward()
    out += [seen, a.grad.tolist(), b.grad.tolist()]
    # hooks on a leaf's AccumulateGrad
    a.grad = None
    acc = lib.autograd.graph.get_gradient_edge(a).node
    h = acc.register_prehook(lambda gs: (gs[0] * 10,))
    (a * 3).sum().backward()
    h.remove()
    out.append(a.grad.tolist())
    return out


def test_node_hooks_match_torch():
    assert _node_hooks(ember) == _node_hooks(torch)


def _edges(lib):
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    m = x.exp()
    e = lib.autograd.graph.get_gradient_edge(m)
    assert e.node is m.grad_fn and e.output_nr == 0
    assert isinstance(e, lib.autograd.graph.GradientEdge)
    ex = lib.autograd.graph.get_gradient_edge(x)
    assert ex.node.variable is x and ex.output_nr == 0
    y = (m * m).sum()
    out = [g.tolist() for g in lib.autograd.grad(y, (e, ex), retain_graph=True)]
    # the edge keeps the gradient of the version of m it was taken from, whatever later in-place writes did
    n = m * 1
    e2 = lib.autograd.graph.get_gradient_edge(n)
    n.mul_(2)
    z = (n * n).sum()
    out += [g.tolist() for g in lib.autograd.grad(z, (e2, n))]
    # an edge of the output itself
    w = x * 2
    (g,) = lib.autograd.grad(w, lib.autograd.graph.get_gradient_edge(w), lib.ones_like(w))
    out.append(g.tolist())
    two = lib.max(x.reshape(3, 1).expand(3, 2), 0)  # several outputs: the edge of output 0
    assert lib.autograd.graph.get_gradient_edge(two[0]).output_nr == 0
    return out


def test_gradient_edges_match_torch():
    assert _edges(ember) == _edges(torch)


@LIBS
def test_gradient_edge_of_a_tensor_without_grad_is_refused(lib):
    with pytest.raises(RuntimeError, match="does not require"):
        lib.autograd.graph.get_gradient_edge(lib.ones(2))


@LIBS
def test_increment_version_makes_saved_values_stale(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    y = a.sin()
    lib.autograd.graph.increment_version(a)
    with pytest.raises(RuntimeError, match=r"modified by an in.?place operation"):
        y.sum().backward()
    v = a._version
    lib.autograd.graph.increment_version([a, x])
    assert a._version == v + 1


def _multi(lib, mode):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0], requires_grad=True)
    c = lib.tensor([5.0, 6.0], requires_grad=True)
    res = []

    def fn(g):
        if mode == "all":
            res.append([None if t is None else t.tolist() for t in g])
        else:
            res.append(g.tolist())

    h = lib.autograd.graph.register_multi_grad_hook((a, b, c), fn, mode=mode)
    (a * 2).sum().backward()
    ((a * 2).sum() + (b * 3).sum()).backward()
    (c * 4).sum().backward()
    (a.exp() * b).sum().backward()
    h.remove()
    (a * b).sum().backward()
    return res


@pytest.mark.parametrize("mode", ["all", "any"])
def test_multi_grad_hook_matches_torch(mode):
    got, want = _multi(ember, mode), _multi(torch, mode)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        if mode == "all":
            assert [x is None for x in g] == [x is None for x in w]
            for x, y in zip(g, w, strict=True):
                if x is not None:
                    np.testing.assert_allclose(x, y, rtol=1e-6)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-6)


@LIBS
def test_multi_grad_hook_bad_mode(lib):
    a = lib.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="mode"):
        lib.autograd.graph.register_multi_grad_hook((a,), lambda g: None, mode="some")
