"""Inference rewrites on traced models (PyTorch's ``torch.fx.experimental.optimization``): ``fuse`` folds each
BatchNorm that follows a convolution or linear layer into its weights; ``remove_dropout`` drops the Dropouts."""

from __future__ import annotations

import copy
from typing import Any

from ... import nn
from ...nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
from .._symbolic_trace import symbolic_trace
from ..graph_module import GraphModule
from ..interpreter import Transformer
from ..node import Argument, Node, Target

__all__ = ["fuse", "remove_dropout", "matches_module_pattern", "replace_node_module"]

_PATTERNS = [
    (nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d), (nn.Conv3d, nn.BatchNorm3d),
    (nn.Linear, nn.BatchNorm1d),
]  # fmt: skip


def matches_module_pattern(pattern: tuple[type, type], node: Node, modules: dict[str, Any]) -> bool:
    """Whether ``node`` calls a module of ``pattern[1]`` on the result of a module of ``pattern[0]``."""
    if not node.args or not isinstance(node.args[0], Node):
        return False
    for expected, current in zip(pattern, (node.args[0], node)):
        if current.op != "call_module" or not isinstance(current.target, str) or current.target not in modules:
            return False
        if type(modules[current.target]) is not expected:
            return False
    return True


def replace_node_module(node: Node, modules: dict[str, Any], new_module: nn.Module) -> None:
    """Install ``new_module`` where ``node``'s module was (in its parent and in ``modules``)."""
    parent, _, name = str(node.target).rpartition(".")
    modules[str(node.target)] = new_module
    setattr(modules[parent], name, new_module)


def fuse(model: nn.Module, inplace: bool = False, no_trace: bool = False) -> GraphModule:
    """Fold BatchNorms into the convolution or linear layer before them (for inference: uses the running
    statistics). ``model`` is copied unless ``inplace``; ``no_trace``: a GraphModule is used as it is."""
    if not inplace:
        model = copy.deepcopy(model)
    gm = model if isinstance(model, GraphModule) and no_trace else symbolic_trace(model)
    modules = dict(gm.named_modules())
    graph = gm.graph
    for pattern in _PATTERNS:
        for node in list(graph.nodes):
            if not matches_module_pattern(pattern, node, modules):
                continue
            first = node.args[0]
            if len(first.users) > 1:  # the layer's output is used elsewhere too
                continue
            layer, bn = modules[first.target], modules[node.target]
            if not bn.track_running_stats:
                continue
            fold = fuse_linear_bn_eval if pattern[0] is nn.Linear else fuse_conv_bn_eval
            replace_node_module(first, modules, fold(layer, bn))
            node.replace_all_uses_with(first)
            graph.erase_node(node)
    return GraphModule(gm, graph)


def remove_dropout(model: nn.Module) -> GraphModule:
    """The traced ``model`` without its ``Dropout`` modules (each returns its input instead)."""
    traced = symbolic_trace(model)

    class DropoutRemover(Transformer):
        def call_module(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
            if isinstance(self.submodules[str(target)], nn.Dropout):
                if len(args) != 1:
                    raise ValueError("remove_dropout: a Dropout called with more than one argument")
                return args[0]
            return super().call_module(target, args, kwargs)

    return DropoutRemover(traced).transform()
