"""Graph rewrites as the torch.fx tutorials write them, run under Ember and PyTorch with the same code: ReLU ->
GELU, conv+bn folding, ``replace_pattern``, a ``Transformer``, ``Interpreter`` and ``ShapeProp``, feature
extraction by picking intermediate nodes."""

from __future__ import annotations

import copy
import operator

import numpy as np
import pytest

import ember
import ember.fx
from ember.testing import torch_or_none

from ._fx_models import cnn, inputs, load_from_torch, node_list, residual

torch = torch_or_none()
pytestmark = pytest.mark.skipif(torch is None, reason="torch not installed")


def _pair(build):
    t_mod = build(torch).double().eval()
    e_mod = build(ember).double().eval()
    load_from_torch(e_mod, t_mod)
    with torch.no_grad():  # running statistics that are not 0/1, so that folding them matters
        for m in t_mod.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5), m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5), m.bias.uniform_(-0.5, 0.5)
    load_from_torch(e_mod, t_mod)
    return e_mod, t_mod


def relu_to_gelu(lib, gm):
    """The tutorial's rewrite: every relu (function, method or ReLU module) becomes F.gelu."""
    F = lib.nn.functional
    for node in list(gm.graph.nodes):
        is_relu_mod = node.op == "call_module" and isinstance(gm.get_submodule(node.target), lib.nn.ReLU)
        if node.target in (lib.relu, F.relu, "relu") or is_relu_mod:
            with gm.graph.inserting_after(node):
                new = gm.graph.call_function(F.gelu, node.args, {})
            node.replace_all_uses_with(new)
            gm.graph.erase_node(node)
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm


def fuse_conv_bn(lib, model):
    """The fx conv/bn fusion tutorial: fold each BatchNorm that follows a Conv2d into the conv's weights."""
    gm = lib.fx.symbolic_trace(copy.deepcopy(model))
    modules = dict(gm.named_modules())
    for node in list(gm.graph.nodes):
        if node.op != "call_module" or not isinstance(modules[node.target], lib.nn.BatchNorm2d):
            continue
        prev = node.args[0]
        if prev.op != "call_module" or not isinstance(modules[prev.target], lib.nn.Conv2d) or len(prev.users) > 1:
            continue
        conv, bn = modules[prev.target], modules[node.target]
        fused = lib.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
        *parent, name = prev.target.rsplit(".", 1)
        setattr(modules[parent[0]] if parent else gm, name, fused)
        node.replace_all_uses_with(prev)
        gm.graph.erase_node(node)
        gm.delete_submodule(node.target)
    gm.graph.lint()
    gm.recompile()
    return gm


@pytest.mark.parametrize("build", [cnn, residual])
def test_relu_to_gelu_rewrite_matches_pytorch(build):
    e_mod, t_mod = _pair(build)
    e_gm = relu_to_gelu(ember, ember.fx.symbolic_trace(e_mod))
    t_gm = relu_to_gelu(torch, torch.fx.symbolic_trace(t_mod))
    assert node_list(e_gm) == node_list(t_gm)
    assert not any(n.target in ("relu", ember.relu) for n in e_gm.graph.nodes)
    name = "cnn" if build is cnn else "residual"
    x = inputs(name)[0]
    e_out, t_out = e_gm(ember.tensor(x)), t_gm(torch.tensor(x))
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert not np.allclose(e_out.detach().numpy(), e_mod(ember.tensor(x)).detach().numpy())  # it did change


@pytest.mark.parametrize("build", [cnn, residual])
def test_conv_bn_folding_keeps_outputs_within_1e6(build):
    e_mod, t_mod = _pair(build)
    e_gm, t_gm = fuse_conv_bn(ember, e_mod), fuse_conv_bn(torch, t_mod)
    assert node_list(e_gm) == node_list(t_gm)
    assert not any(isinstance(m, ember.nn.BatchNorm2d) for m in e_gm.modules())
    x = inputs("cnn" if build is cnn else "residual")[0]
    eager = e_mod(ember.tensor(x)).detach().numpy()
    np.testing.assert_allclose(e_gm(ember.tensor(x)).detach().numpy(), eager, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(e_gm(ember.tensor(x)).detach().numpy(), t_gm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-9, atol=1e-11)  # fmt: skip


def _patterns(lib):
    def pattern(x, w):
        return lib.relu(lib.matmul(x, w))

    def replacement(x, w):
        return lib.sigmoid(lib.matmul(x, w)) * 2.0

    def f(x, w, v):
        a = lib.relu(lib.matmul(x, w))
        b = lib.relu(lib.matmul(a, v))
        c = lib.matmul(b, v)  # no relu: not a match
        return c + lib.relu(lib.matmul(x, w)).sum()

    return pattern, replacement, f


def test_replace_pattern_matches_pytorch():
    results = {}
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((3, 3)) for _ in range(3)]
    for lib in (ember, torch):
        pattern, replacement, f = _patterns(lib)
        gm = lib.fx.symbolic_trace(f)
        matches = lib.fx.replace_pattern(gm, pattern, replacement)
        gm.graph.lint()
        out = gm(*[lib.tensor(a) for a in arrays])
        results[lib.__name__] = (len(matches), node_list(gm), out.numpy(), [m.anchor.name for m in matches])
    assert results["ember"][0] == results["torch"][0] == 3
    assert results["ember"][1] == results["torch"][1]
    assert results["ember"][3] == results["torch"][3]
    np.testing.assert_allclose(results["ember"][2], results["torch"][2], rtol=1e-12)


def test_interpreter_and_shape_prop_match_pytorch():
    e_mod, t_mod = _pair(residual)
    e_gm, t_gm = ember.fx.symbolic_trace(e_mod), torch.fx.symbolic_trace(t_mod)
    x = inputs("residual")[0]
    from torch.fx.passes.shape_prop import ShapeProp as TShapeProp

    from ember.fx.passes.shape_prop import ShapeProp, TensorMetadata

    e_res, t_res = ShapeProp(e_gm).propagate(ember.tensor(x)), TShapeProp(t_gm).propagate(torch.tensor(x))
    np.testing.assert_allclose(e_res.detach().numpy(), t_res.detach().numpy(), rtol=1e-10)
    for en, tn in zip(e_gm.graph.nodes, t_gm.graph.nodes, strict=True):
        et, tt = en.meta.get("tensor_meta"), tn.meta.get("tensor_meta")
        assert (et is None) == (tt is None), en.name
        if et is not None:
            assert isinstance(et, TensorMetadata) and et._fields == tt._fields
            assert tuple(et.shape) == tuple(tt.shape) and str(et.dtype).split(".")[-1] == str(tt.dtype).split(".")[-1]
            assert et.requires_grad == tt.requires_grad, en.name

    class CountCalls(ember.fx.Interpreter):
        def __init__(self, gm):
            super().__init__(gm)
            self.ops = []

        def call_module(self, target, args, kwargs):
            self.ops.append(target)
            return super().call_module(target, args, kwargs)

    interp = CountCalls(e_gm)
    np.testing.assert_array_equal(interp.run(ember.tensor(x)).detach().numpy(), e_gm(ember.tensor(x)).detach().numpy())
    assert interp.ops == [n.target for n in t_gm.graph.nodes if n.op == "call_module"]


def _neg_sigmoid(lib):
    class NegSigmoid(lib.fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is lib.sigmoid:
                return super().call_function(lib.neg, args, kwargs)
            if target is operator.add:  # called directly on the proxies: recorded as in PyTorch
                return lib.sub(lib.exp(args[0]), args[1] * 3)
            return super().call_function(target, args, kwargs)

    def f(x):
        return lib.sigmoid(x) + x.relu()

    gm = NegSigmoid(lib.fx.symbolic_trace(f)).transform()
    return node_list(gm), gm(lib.tensor([[-1.0, 2.0]], dtype=lib.float64)).numpy()


def test_transformer_swaps_functions_like_pytorch():
    (e_nodes, e_out), (t_nodes, t_out) = _neg_sigmoid(ember), _neg_sigmoid(torch)
    assert e_nodes == t_nodes and ("call_function", "neg") in e_nodes and ("call_function", "exp") in e_nodes
    np.testing.assert_array_equal(e_out, t_out)


def test_feature_extraction_by_picking_intermediate_nodes():
    e_mod, t_mod = _pair(cnn)
    feats = {}
    for lib, mod in ((ember, e_mod), (torch, t_mod)):
        gm = lib.fx.symbolic_trace(mod)
        wanted = {"bn1": "low", "relu_1": "high"}
        nodes = {n.name: n for n in gm.graph.nodes}
        out = next(n for n in gm.graph.nodes if n.op == "output")
        gm.graph.erase_node(out)
        with gm.graph.inserting_after(list(gm.graph.nodes)[-1]):
            gm.graph.output({v: nodes[k] for k, v in wanted.items()})
        gm.graph.eliminate_dead_code()
        gm.delete_all_unused_submodules()
        gm.recompile()
        res = gm(lib.tensor(inputs("cnn")[0]))
        feats[lib.__name__] = ({k: v.detach().numpy() for k, v in res.items()}, node_list(gm), sorted(
            n for n, _ in gm.named_modules()))  # fmt: skip
    assert feats["ember"][1] == feats["torch"][1]
    assert feats["ember"][2] == feats["torch"][2]
    for k in ("low", "high"):
        np.testing.assert_allclose(feats["ember"][0][k], feats["torch"][0][k], rtol=1e-10, atol=1e-12)
