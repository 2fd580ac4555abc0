"""The Graph/Node/GraphModule/Tracer API, the same code under Ember and PyTorch: editing (insert, erase, dead
code, lint), node bookkeeping (users, replace_input_with, prepend/append), submodule management, hand-built
graphs, ``wrap`` and autowrapped ``math``, leaf-module overrides, pickling and copying."""

from __future__ import annotations

import copy
import io
import math
import pickle

import numpy as np
import pytest

import ember
import ember.fx
from ember.testing import torch_or_none

from ._fx_models import mlp, node_list

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
LIBS = [ember] if torch is None else [ember, torch]


def my_clamp(x, lo):  # registered with wrap below: recorded as one node, not traced through
    return x.clamp(min=lo) if x.dim() > 0 else x


ember.fx.wrap("my_clamp")
if torch is not None:
    torch.fx.wrap("my_clamp")


def _both(fn):
    """``fn(lib)`` under each library; returns the results keyed by library name."""
    return {lib.__name__: fn(lib) for lib in LIBS}


def _same(results):
    vals = list(results.values())
    assert all(v == vals[0] for v in vals[1:]), results
    return vals[0]


def test_node_bookkeeping_and_editing():
    def run(lib):
        def f(x, y):
            a = x + y
            b = a * 2
            return b - a

        gm = lib.fx.symbolic_trace(f)
        g = gm.graph
        nodes = {n.name: n for n in g.nodes}
        users = {k: sorted(u.name for u in n.users) for k, n in nodes.items()}
        inputs = [i.name for i in nodes["sub"].all_input_nodes]
        nodes["sub"].replace_input_with(nodes["a" if "a" in nodes else "add"], nodes["x"])
        after_replace = sorted(u.name for u in nodes["x"].users)
        with g.inserting_before(nodes["mul"]):
            neg = g.call_function(lib.neg, (nodes["x"],))
        nodes["mul"].update_arg(0, neg)
        dce = g.eliminate_dead_code()  # add has no users left
        g.lint()
        gm.recompile()
        order = [n.name for n in g.nodes]
        nodes["mul"].prepend(nodes["y"])  # move y just before mul
        moved = [n.name for n in g.nodes]
        out = gm(lib.tensor([1.0, 2.0]), lib.tensor([3.0, 5.0])).tolist()
        return users, inputs, after_replace, dce, order, moved, out, len(g.nodes)

    res = _same(_both(run))  # users, inputs, users after replace_input_with, ..., node order: all as torch's
    dce, order, out = res[3], res[4], res[6]
    assert dce and out == [-3.0, -6.0] and "add" not in order


def test_erase_node_with_users_and_lint_errors():
    _both(_erase_and_lint)


def _erase_and_lint(lib):
    gm = lib.fx.symbolic_trace(lambda x: lib.relu(x) + 1)
    relu = next(n for n in gm.graph.nodes if n.name == "relu")
    with pytest.raises(RuntimeError, match="still had 1 users"):
        gm.graph.erase_node(relu)
    other = lib.fx.Graph()
    foreign = other.placeholder("z")
    add = next(n for n in gm.graph.nodes if n.name == "add")
    add.args = (foreign, 1)  # a node of another graph
    with pytest.raises(RuntimeError, match="does not belong to this Graph"):
        gm.graph.lint()


def test_hand_built_graph_and_graph_module_from_a_dict():
    def run(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        w = g.get_attr("lin.weight")
        mm = g.call_function(lib.matmul, (x, g.call_method("t", (w,))))
        r = g.call_module("act", (mm,))
        s = g.call_method("sum", (r,), {"dim": 1})
        g.output((s, r))
        lin = lib.nn.Linear(2, 3, bias=False).double()
        with lib.no_grad():
            lin.weight.copy_(lib.tensor([[1.0, -1.0], [0.5, 2.0], [-3.0, 0.0]], dtype=lib.float64))
        gm = lib.fx.GraphModule({"lin.weight": lin.weight, "act": lib.nn.Tanh()}, g, "Hand")
        gm.graph.lint()
        out = gm(lib.tensor([[1.0, 2.0]], dtype=lib.float64))
        return type(gm).__name__, [o.detach().flatten().tolist() for o in out], node_list(gm), [str(n) for n in g.nodes]

    res = _same(_both(run))
    assert res[0] == "Hand" and res[2][-1] == ("output", "output")


def test_graph_module_submodule_management():
    def run(lib):
        gm = lib.fx.symbolic_trace(mlp(lib))
        assert gm.get_submodule("fc1") is not None
        ok_add = gm.add_submodule("extra.inner", lib.nn.Identity())
        has = isinstance(gm.get_submodule("extra.inner"), lib.nn.Identity)
        ok_del = gm.delete_submodule("extra.inner")
        missing = gm.delete_submodule("nope")
        gm.delete_all_unused_submodules()
        return ok_add, has, ok_del, missing, sorted(n for n, _ in gm.named_modules())

    _same(_both(run))


def test_wrap_autowrap_math_and_custom_leaves():
    def run(lib):
        def f(x):
            return my_clamp(x, 0.5) * math.sqrt(x.size(1))

        gm = lib.fx.symbolic_trace(f)
        out = gm(lib.tensor([[0.0, 1.0, 4.0, 9.0]], dtype=lib.float64)).tolist()

        class Leafy(lib.fx.Tracer):
            def is_leaf_module(self, m, qualname):
                return qualname == "fc1" or super().is_leaf_module(m, qualname)

        class Outer(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.body = mlp(lib)

            def forward(self, x):
                return self.body(x).softmax(-1)

        g_default = lib.fx.Tracer().trace(Outer())
        g_custom = Leafy().trace(mlp(lib))

        class NoLeaves(lib.fx.Tracer):
            def is_leaf_module(self, m, qualname):
                return False

        g_inside = NoLeaves().trace(lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU()))
        return (node_list(gm), out, [(n.op, str(n.target)) for n in g_default.nodes],
                [(n.op, str(n.target)) for n in g_custom.nodes], [n.op for n in g_inside.nodes])  # fmt: skip

    r = _both(run)
    nodes, out, default, custom, inside = r["ember"]
    assert ("call_function", "my_clamp") in nodes and ("call_function", "sqrt") in nodes
    np.testing.assert_allclose(out, [[1.0, 2.0, 8.0, 18.0]])
    assert ("call_module", "body.fc1") in default and "call_module" not in inside
    if torch is not None:
        t_nodes, t_out, t_default, t_custom, _ = r["torch"]
        assert (nodes, out, default, custom) == (t_nodes, t_out, t_default, t_custom)


def test_tracer_create_proxy_override_sees_every_node():
    def run(lib):
        seen = []

        class Recording(lib.fx.Tracer):
            def create_proxy(self, kind, target, args, kwargs, *rest, **kw):
                seen.append(kind)
                return super().create_proxy(kind, target, args, kwargs, *rest, **kw)

        Recording().trace(mlp(lib))
        return seen

    _same(_both(run))


def test_python_code_print_tabular_and_str(capsys):
    gm = ember.fx.symbolic_trace(mlp(ember))
    code = gm.graph.python_code("self")
    assert code.src == gm.code and "def forward(self, x):" in gm.code and "self.fc1(x)" in gm.code
    gm.graph.print_tabular()
    printed = capsys.readouterr().out
    assert "call_module" in printed and "fc2" in printed
    assert "%fc1 : [num_users=1] = call_module[target=fc1](args = (%x,), kwargs = {})" in str(gm.graph)
    assert gm.graph.output_node() is list(gm.graph.nodes)[-1] and gm.graph.output_node().op == "output"
    gm.meta["note"] = [1]
    assert copy.deepcopy(gm).meta == {"note": [1]} and pickle.loads(pickle.dumps(gm)).meta == {"note": [1]}
    fc1 = gm.graph.find_nodes(op="call_module", target="fc1")[0]
    assert fc1.stack_trace is None
    fc1.stack_trace = "File x.py, line 1"
    assert fc1.meta["stack_trace"] == "File x.py, line 1"


def test_graph_module_pickles_saves_and_copies(tmp_path):
    mod = mlp(ember)
    gm = ember.fx.symbolic_trace(mod)
    x = ember.randn(3, 6)
    ref = gm(x).detach().numpy()
    for clone in (pickle.loads(pickle.dumps(gm)), copy.deepcopy(gm)):
        np.testing.assert_array_equal(clone(x).detach().numpy(), ref)
        assert clone.code == gm.code and clone.fc1.weight is not gm.fc1.weight
        assert node_list(clone) == node_list(gm)
    buf = io.BytesIO()
    ember.save(gm, buf)
    buf.seek(0)
    loaded = ember.load(buf, weights_only=False)
    np.testing.assert_array_equal(loaded(x).detach().numpy(), ref)
    assert isinstance(loaded, ember.fx.GraphModule)
    # the state dict of a GraphModule loads back into the model it came from
    fresh = mlp(ember)
    fresh.load_state_dict(gm.state_dict())
    np.testing.assert_array_equal(fresh(x).detach().numpy(), ref)


@needs_torch
def test_import_through_the_torch_alias_gets_ember_fx():
    import subprocess
    import sys
    from pathlib import Path

    src = str(Path(ember.__file__).resolve().parents[1])
    code = ("import sys, ember; sys.modules['torch'] = ember\n"
            "import torch.fx\nfrom torch.fx import symbolic_trace, GraphModule, Node\n"
            "from torch.fx.passes.shape_prop import ShapeProp\nfrom torch.fx.node import map_arg\n"
            "assert torch.fx is ember.fx and ShapeProp is ember.fx.passes.shape_prop.ShapeProp\n"
            "gm = symbolic_trace(torch.nn.Linear(2, 2)); assert isinstance(gm, GraphModule); print('ok')")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": src},
                       timeout=120)  # fmt: skip
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


def test_tracing_into_library_modules_records_their_functions_like_pytorch():
    def run(lib):
        class NoLeaves(lib.fx.Tracer):
            def is_leaf_module(self, m, qualname):
                return False

        nn = lib.nn
        seq = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.2), nn.ReLU(), nn.Tanh(), nn.Softmax(-1)).double().eval()
        graph = NoLeaves().trace(seq)
        single = NoLeaves().trace(nn.Dropout(0.5))  # the root itself is a library module
        return [(n.op, str(getattr(n.target, "__name__", n.target))) for n in graph.nodes], node_list(
            lib.fx.GraphModule(nn.Dropout(0.5), single)
        )

    r = _same(_both(run))
    assert ("call_function", "linear") in r[0] and ("call_function", "dropout") in r[1]


def test_dead_code_elimination_keeps_effects():
    """Unused pure nodes go; random functions, asserts and in-place writes stay. PyTorch 2.13 also drops unused
    in-place calls (``x.add_(1)``, ``torch.relu_(x)``), which changes the result: Ember keeps them (a PyTorch bug,
    not followed)."""

    def run(lib):
        def f(x):
            x.add_(1)
            unused = x * 2  # noqa: F841 - dead code
            lib.rand_like(x)  # advances the generator: kept
            lib.relu_(x)
            return x * 3

        gm = lib.fx.symbolic_trace(f)
        changed = gm.graph.eliminate_dead_code()
        gm.recompile()
        out = gm(lib.tensor([-2.0, 1.0]))
        return changed, [t for _, t in node_list(gm)], out.tolist()

    e_changed, e_nodes, e_out = run(ember)
    assert e_changed and "mul" in e_nodes and e_nodes.count("mul") == 1
    assert "rand_like" in e_nodes and "add_" in e_nodes and "relu_" in e_nodes
    assert e_out == [0.0, 6.0]  # (x + 1).relu_() * 3, as the eager function computes
    if torch is not None:
        t_changed, t_nodes, t_out = run(torch)
        assert t_changed and "rand_like" in t_nodes
        assert "add_" not in t_nodes and "relu_" not in t_nodes and t_out == [-6.0, 3.0]  # the writes were dropped


Pair = __import__("collections").namedtuple("Pair", "first second")


def test_namedtuple_and_dict_outputs_round_trip():
    def run(lib):
        def f(x):
            return Pair(x + 1, {(1, 2): x * 2, 3: [x, 1.5]})

        gm = lib.fx.symbolic_trace(f)
        out = pickle.loads(pickle.dumps(gm))(lib.tensor([1.0])) if lib is ember else gm(lib.tensor([1.0]))
        assert isinstance(out, Pair)
        return out.first.tolist(), out.second[(1, 2)].tolist(), out.second[3][1], node_list(gm)

    _same(_both(run))


def _insert_two_after(lib):
    gm = lib.fx.symbolic_trace(lambda x: x.relu() + 1)
    g = gm.graph
    relu = next(n for n in g.nodes if n.name == "relu")
    with g.inserting_after(relu):
        neg = g.call_function(lib.neg, (relu,))
        g.call_function(lib.exp, (neg,))
    return gm, [n.name for n in g.nodes]


def test_inserting_after_keeps_the_order_of_the_inserted_nodes():
    """Ember puts successive inserts after one another, so a node can read the one inserted before it. PyTorch
    2.13 puts each right after the anchor, reversing them: exp before the neg it reads (a PyTorch bug, not
    followed; its lint then fails)."""
    gm, names = _insert_two_after(ember)
    assert names == ["x", "relu", "neg", "exp", "add", "output"]
    gm.graph.lint()
    if torch is not None:
        t_gm, t_names = _insert_two_after(torch)
        assert t_names == ["x", "relu", "exp", "neg", "add", "output"]
        with pytest.raises(RuntimeError, match="used before it has been defined"):
            t_gm.graph.lint()
