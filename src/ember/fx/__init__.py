"""``ember.fx``: PyTorch's ``torch.fx`` — symbolic tracing, graphs, graph modules, interpreters, rewrites.

``symbolic_trace(model)`` runs ``forward`` on ``Proxy`` objects and records a ``Graph`` of ``Node`` s, returned as a
``GraphModule`` whose generated Python ``forward`` (``gm.code``) reruns it. Calls of Ember's functions are recorded
by patching the functions for the length of the trace (Ember has no ``__torch_function__``; see
docs/architecture.md, "ember.fx"), so eager calls pay nothing.
"""

from __future__ import annotations

from . import experimental, graph, graph_module, interpreter, node, passes, proxy, subgraph_rewriter
from ._symbolic_trace import PH, Tracer, symbolic_trace, wrap
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Proxy
from .subgraph_rewriter import replace_pattern

__all__ = [
    "Graph", "GraphModule", "Interpreter", "Node", "PH", "Proxy", "Tracer", "Transformer", "map_arg",
    "replace_pattern", "symbolic_trace", "wrap",
]  # fmt: skip
_ = (experimental, graph, graph_module, interpreter, node, passes, proxy, subgraph_rewriter)
