"""``ember.pnnx``: run models exported by ncnn's PNNX converter (``NAME.pnnx.param`` + ``NAME.pnnx.bin``).

>>> model = ember.pnnx.load("resnet18.pnnx.param")          # weights from resnet18.pnnx.bin
>>> logits = model(ember.randn(1, 3, 224, 224))

The loaded model is an ordinary ``Module``: its weights are ``Param``s (fine-tune it, save it as a
record, move it with ``.to``), and it runs on any backend. ``read_param`` parses a graph without
weights (``ember pnnx info`` uses it, so a graph with unknown operators can still be inspected).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ._graph import SUPPORTED_TYPES, PnnxModule, UnsupportedOperatorError, is_supported, topological_order
from ._reader import Graph, Operator, PnnxFormatError, read_param, read_weights

__all__ = [
    "Graph", "Operator", "PnnxFormatError", "PnnxModule", "SUPPORTED_TYPES", "UnsupportedOperatorError",
    "default_bin_path", "is_supported", "load", "operator_counts", "read_param", "read_weights", "topological_order",
]  # fmt: skip


def default_bin_path(param_path: str | Path) -> Path:
    """``NAME.pnnx.param`` -> ``NAME.pnnx.bin`` (any other name: the ``.param`` suffix becomes ``.bin``)."""
    p = Path(param_path)
    return p.with_suffix(".bin") if p.suffix == ".param" else p.with_name(p.name + ".bin")


def load(param_path: str | Path, bin_path: str | Path | None = None) -> PnnxModule:
    """Load a PNNX model as an Ember ``Module`` (in eval mode).

    ``bin_path`` defaults to the param file's name with ``.bin`` for ``.param``. Call the result with
    the inputs in ``pnnx.Input`` order; it returns a Tensor, or a tuple in ``pnnx.Output`` order.
    Raises ``PnnxFormatError`` for a malformed or inconsistent file and ``UnsupportedOperatorError``
    for an operator type Ember cannot run (``SUPPORTED_TYPES`` lists those it can).
    """
    graph = read_param(param_path)
    weights = read_weights(graph, default_bin_path(param_path) if bin_path is None else bin_path)
    model = PnnxModule(graph, weights)
    model.eval()
    return model


def operator_counts(graph: Graph) -> dict[str, int]:
    """How many operators of each type the graph holds, most frequent first."""
    return dict(Counter(op.type for op in graph.operators).most_common())
