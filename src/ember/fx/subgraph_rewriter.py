"""``replace_pattern``: replace every match of a pattern graph by a replacement graph
(PyTorch's ``torch.fx.subgraph_rewriter``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ..nn import Module
from ._symbolic_trace import symbolic_trace
from .graph_module import GraphModule
from .node import Node

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    """One replaced match: the pattern's anchor (the node it returns), and pattern node -> graph node."""

    anchor: Node
    nodes_map: dict[Node, Node]


def _as_gm(obj: Callable[..., Any] | GraphModule) -> GraphModule:
    return obj if isinstance(obj, GraphModule) else symbolic_trace(obj)


class _Matcher:
    def __init__(self, pattern: GraphModule) -> None:
        self.placeholders = [n for n in pattern.graph.nodes if n.op == "placeholder"]
        out = next(n for n in pattern.graph.nodes if n.op == "output")
        if not isinstance(out.args[0], Node):
            raise ValueError("replace_pattern: the pattern must return a single value (one output node)")
        self.anchor = out.args[0]

    def match(self, gn: Node) -> dict[Node, Node] | None:
        m: dict[Node, Node] = {}
        return m if self._node(self.anchor, gn, m) and self._closed(m) else None

    def _node(self, pn: Node, gn: Node, m: dict[Node, Node]) -> bool:
        if pn in m:
            return m[pn] is gn
        if pn.op == "placeholder":
            m[pn] = gn
            return True
        if pn.op != gn.op or pn.target != gn.target or len(pn.args) != len(gn.args):
            return False
        if set(pn.kwargs) != set(gn.kwargs):
            return False
        m[pn] = gn
        ok = all(self._arg(a, b, m) for a, b in zip(pn.args, gn.args))
        return ok and all(self._arg(pn.kwargs[k], gn.kwargs[k], m) for k in pn.kwargs)

    def _arg(self, a: Any, b: Any, m: dict[Node, Node]) -> bool:
        if isinstance(a, Node):
            return isinstance(b, Node) and self._node(a, b, m)
        if isinstance(a, (tuple, list)):
            return type(a) is type(b) and len(a) == len(b) and all(self._arg(x, y, m) for x, y in zip(a, b))
        if isinstance(b, Node):
            return False
        return bool(type(a) is type(b) and a == b)

    def _closed(self, m: dict[Node, Node]) -> bool:
        """Only the anchor's result may be read from outside the match."""
        inner = {g for p, g in m.items() if p.op != "placeholder"}
        for p, g in m.items():
            if p.op == "placeholder" or p is self.anchor:
                continue
            if any(u not in inner for u in g.users):
                return False
        return True


def replace_pattern(
    gm: GraphModule, pattern: Callable[..., Any] | GraphModule, replacement: Callable[..., Any] | GraphModule
) -> list[Match]:
    """Replace each non-overlapping match of ``pattern`` in ``gm`` by ``replacement``; returns the matches.

    Both are functions (traced) or ``GraphModule`` s with the same inputs in the same order; ``gm`` is
    recompiled."""
    pat, rep = _as_gm(pattern), _as_gm(replacement)
    matcher = _Matcher(pat)
    rep_placeholders = [n for n in rep.graph.nodes if n.op == "placeholder"]
    if len(rep_placeholders) != len(matcher.placeholders):
        raise ValueError(
            f"replace_pattern: the pattern takes {len(matcher.placeholders)} inputs, the replacement "
            f"{len(rep_placeholders)}"
        )
    matches: list[Match] = []
    used: set[Node] = set()
    for gn in list(gm.graph.nodes):
        if gn in used:
            continue
        m = matcher.match(gn)
        if m is None:
            continue
        inner = [g for p, g in m.items() if p.op != "placeholder"]
        if any(g in used for g in inner):
            continue
        used.update(inner)
        matches.append(Match(matcher.anchor, m))
    replaced: dict[Node, Node] = {}  # an earlier match's anchor -> what replaced it (a later match may read it)
    for match in matches:
        replaced[match.nodes_map[match.anchor]] = _replace(gm, match, matcher, rep, rep_placeholders, replaced)
    gm.recompile()
    return matches


def _replace(
    gm: GraphModule, match: Match, matcher: _Matcher, rep: GraphModule, rep_ph: list[Node], replaced: dict[Node, Node]
) -> Node:
    g, m = gm.graph, match.nodes_map
    val_map: dict[Node, Any] = {rp: replaced.get(m[pp], m[pp]) for rp, pp in zip(rep_ph, matcher.placeholders)}
    for n in rep.graph.nodes:
        if n.op in ("get_attr", "call_module") and not _has(gm, n.target):
            value = rep.get_submodule(n.target) if n.op == "call_module" else _fetch(rep, n.target)
            if isinstance(value, Module):
                gm.add_submodule(n.target, value)
            else:
                setattr(gm, n.target, value)
    anchor = m[match.anchor]
    with g.inserting_before(anchor):
        out = g.graph_copy(rep.graph, val_map)
    if not isinstance(out, Node):
        raise ValueError("replace_pattern: the replacement must return a single value (one output node)")
    anchor.replace_all_uses_with(out)
    order = {n: i for i, n in enumerate(g.nodes)}
    inner = [(p, gn) for p, gn in m.items() if p.op != "placeholder"]
    for _, gnode in sorted(inner, key=lambda t: -order[t[1]]):
        if not gnode.users:
            g.erase_node(gnode)
    return out


def _fetch(mod: Any, target: str) -> Any:
    for part in target.split("."):
        mod = getattr(mod, part)
    return mod


def _has(mod: Any, target: str) -> bool:
    try:
        _fetch(mod, target)
    except AttributeError:
        return False
    return True
