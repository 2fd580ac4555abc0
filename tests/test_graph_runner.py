"""``ember._graph_runner``: the interpreter that ember.pnnx and ember.onnx share."""

from __future__ import annotations

import gc
import weakref

import pytest

import ember
from ember._errors import ShapeError
from ember._graph_runner import GraphRunner, Node, topological_order


def _node(name, inputs, outputs, fn=None):
    return Node("T", name, inputs, outputs, fn=fn, where=f"g:{name}")


def test_order_keeps_a_valid_order_and_fixes_a_shuffled_one():
    nodes = [_node("b", ["t"], ["u"]), _node("a", ["x"], ["t"]), _node("c", ["t", "u"], ["y"])]
    assert topological_order(nodes, ["x"]) == [1, 0, 2]
    assert topological_order([nodes[1], nodes[0], nodes[2]], ["x"]) == [0, 1, 2]


@pytest.mark.parametrize(
    "nodes, match",
    [
        ([_node("a", ["q"], ["y"])], r"g:a: operator 'a' reads operand 'q', which no operator produces"),
        ([_node("a", ["x"], ["y"]), _node("b", ["x"], ["y"])], r"g:b: operand 'y' is produced twice"),
        ([_node("a", ["x"], ["x"])], r"produced twice \(it is a graph input\)"),
        ([_node("a", ["z"], ["y"]), _node("b", ["y"], ["z"])], r"cycle through operator 'a'"),
    ],
)
def test_structural_errors_name_the_node(nodes, match):
    with pytest.raises(ValueError, match=match):
        GraphRunner(nodes, ["x"], ["y"])


def test_run_frees_intermediates_after_their_last_use():
    seen = []

    def keep(args, device):
        out = args[0] + 1
        seen.append(weakref.ref(out))
        return out

    def check(args, device):
        gc.collect()
        assert seen[0]() is None  # "t" was used last by node b: freed before c runs
        return args[0] * 2

    runner = GraphRunner(
        [
            _node("a", ["x"], ["t"], keep),
            _node("b", ["t"], ["u"], lambda a, d: a[0] * 1),
            _node("c", ["u"], ["y"], check),
        ],
        ["x"],
        ["y"],
    )
    (y,) = runner.run([ember.tensor([1.0])])
    assert y.tolist() == [4.0]


def test_omitted_optional_inputs_are_none_and_multiple_outputs_are_spread():
    runner = GraphRunner(
        [
            _node("s", ["x", ""], ["a", "b"], lambda a, d: (a[0], a[1])),
            _node("t", ["a"], ["", "c"], lambda a, d: (0, 7)),
        ],
        ["x"],
        ["b", "c", "x"],
    )
    assert runner.run([5]) == [None, 7, 5]


def test_run_time_failure_names_node_and_shapes():
    runner = GraphRunner([_node("mm", ["x", "w"], ["y"], lambda a, d: a[0] @ a[1])], ["x", "w"], ["y"])
    with pytest.raises(ShapeError, match=r"g:mm: operator 'mm' \(T\) failed on input shapes \[\(2, 3\), \(4, 5\)\]"):
        runner.run([ember.zeros(2, 3), ember.zeros(4, 5)])
    wrong = GraphRunner([_node("two", ["x"], ["a", "b"], lambda a, d: a[0])], ["x"], ["a"])
    with pytest.raises(ShapeError, match="gave 1 outputs, the graph expects 2"):
        wrong.run([ember.zeros(1)])
