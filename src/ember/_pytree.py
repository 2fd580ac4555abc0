"""PyTorch's pytree helpers (``torch.utils._pytree``, public as ``ember.utils._pytree``), which libraries import
to walk the nested lists, tuples, dicts and named tuples of tensors a model takes and returns.

A tree's leaves are everything that is not a registered container (``None`` is a leaf, as in PyTorch 2.13).
Containers: ``tuple``, ``Size``, ``list``, ``dict`` (insertion order), named tuples, ``OrderedDict``, ``defaultdict``,
``deque``, and any type given to :func:`register_pytree_node`. As in PyTorch, ``SUPPORTED_NODES`` maps each container
type to its node (``flatten_fn``, ``unflatten_fn``), named tuples under ``collections.namedtuple`` (what
``_get_node_type`` gives for one and what their ``TreeSpec.type`` is), and ``PyTree`` is the annotation ``Any``.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from ._size import Size

__all__ = [
    "GetAttrKey", "LeafSpec", "PyTree", "MappingKey", "SequenceKey", "TreeSpec", "keystr", "register_dataclass",
    "register_pytree_node", "tree_all", "tree_all_only", "tree_any", "tree_any_only", "tree_flatten",
    "tree_flatten_with_path", "tree_is_leaf", "tree_iter", "tree_leaves", "tree_map", "tree_map_", "tree_map_only",
    "tree_map_with_path", "tree_structure", "tree_unflatten",
]  # fmt: skip


class _Node(NamedTuple):
    flatten: Callable[[Any], tuple[list[Any], Any]]
    unflatten: Callable[[Iterable[Any], Any], Any]
    keys: Callable[[Any], list[Any]]

    @property
    def flatten_fn(self) -> Callable[[Any], tuple[list[Any], Any]]:
        """``flatten_fn(x) -> (children, context)`` (PyTorch's ``NodeDef`` field name)."""
        return self.flatten

    @property
    def unflatten_fn(self) -> Callable[[Iterable[Any], Any], Any]:
        """``unflatten_fn(children, context) -> x`` (PyTorch's ``NodeDef`` field name)."""
        return self.unflatten


#: what a tree is annotated with (PyTorch's alias)
PyTree = Any

SUPPORTED_NODES: dict[type, _Node] = {}


def register_pytree_node(cls: type, flatten_fn: Callable[[Any], tuple[list[Any], Any]],
                         unflatten_fn: Callable[[Iterable[Any], Any], Any], *, serialized_type_name: str | None = None,
                         to_dumpable_context: Any = None, from_dumpable_context: Any = None,
                         flatten_with_keys_fn: Callable[[Any], tuple[list[tuple[Any, Any]], Any]] | None = None,
                         ) -> None:  # fmt: skip
    """Make ``cls`` a container: ``flatten_fn(x) -> (children, context)``, ``unflatten_fn(children, context)``."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")

    def keys(x: Any) -> list[Any]:
        if flatten_with_keys_fn is not None:
            return [k for k, _ in flatten_with_keys_fn(x)[0]]
        return [SequenceKey(i) for i in range(len(flatten_fn(x)[0]))]

    SUPPORTED_NODES[cls] = _Node(flatten_fn, unflatten_fn, keys)


def register_dataclass(cls: type, **_: Any) -> type:
    """Make a dataclass a container of its fields."""
    names = [f.name for f in dataclasses.fields(cls)]
    register_pytree_node(
        cls,
        lambda x: ([getattr(x, n) for n in names], None),
        lambda children, _ctx: cls(**dict(zip(names, children, strict=True))),
        flatten_with_keys_fn=lambda x: ([(GetAttrKey(n), getattr(x, n)) for n in names], None),
    )
    return cls


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """A position in a list or tuple, in a key path."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """A key of a dict, in a key path."""

    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """A field of a named tuple or dataclass, in a key path."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


def keystr(kp: tuple[Any, ...]) -> str:
    """A key path as text: ``[0]['a'].x``."""
    return "".join(str(k) for k in kp)


def _dict_flatten(d: dict[Any, Any]) -> tuple[list[Any], list[Any]]:
    return list(d.values()), list(d)


def _dict_unflatten(values: Iterable[Any], context: list[Any]) -> dict[Any, Any]:
    return dict(zip(context, values, strict=True))


def _dict_flatten_with_keys(d: dict[Any, Any]) -> tuple[list[tuple[MappingKey, Any]], list[Any]]:
    """PyTorch's helper that libraries pass as ``flatten_with_keys_fn`` for dict-like containers."""
    return [(MappingKey(k), v) for k, v in d.items()], list(d)


def _seq(kind: type) -> _Node:
    return _Node(lambda x: (list(x), None), lambda c, _ctx: kind(c), lambda x: [SequenceKey(i) for i in range(len(x))])


SUPPORTED_NODES[tuple] = _seq(tuple)
SUPPORTED_NODES[Size] = _seq(tuple)  # as PyTorch's torch.Size: its ints are leaves, it unflattens to a tuple
SUPPORTED_NODES[list] = _seq(list)
SUPPORTED_NODES[dict] = _Node(_dict_flatten, _dict_unflatten, lambda x: [MappingKey(k) for k in x])
SUPPORTED_NODES[OrderedDict] = _Node(lambda x: (list(x.values()), list(x)),
                                     lambda c, ks: OrderedDict(zip(ks, c, strict=True)),
                                     lambda x: [MappingKey(k) for k in x])  # fmt: skip
SUPPORTED_NODES[defaultdict] = _Node(lambda x: (list(x.values()), [x.default_factory, list(x)]),
                                     lambda c, ctx: defaultdict(ctx[0], zip(ctx[1], c, strict=True)),
                                     lambda x: [MappingKey(k) for k in x])  # fmt: skip
SUPPORTED_NODES[deque] = _Node(lambda x: (list(x), x.maxlen), lambda c, n: deque(c, maxlen=n),
                               lambda x: [SequenceKey(i) for i in range(len(x))])  # fmt: skip
_NAMEDTUPLE = SUPPORTED_NODES[namedtuple] = _Node(  # type: ignore[index]
    lambda x: (list(x), type(x)), lambda c, kind: kind(*c), lambda x: [GetAttrKey(f) for f in x._fields]
)


def _get_node_type(tree: Any) -> Any:
    """The key of ``tree``'s node in ``SUPPORTED_NODES``: its type, or ``collections.namedtuple`` for a named tuple."""
    kind = type(tree)
    if kind not in SUPPORTED_NODES and isinstance(tree, tuple) and hasattr(kind, "_fields"):
        return namedtuple
    return kind


def _node_of(x: Any) -> tuple[type, _Node] | None:
    kind = type(x)
    if kind in SUPPORTED_NODES:
        return kind, SUPPORTED_NODES[kind]
    if isinstance(x, tuple) and hasattr(kind, "_fields"):  # a named tuple
        return namedtuple, _NAMEDTUPLE  # type: ignore[return-value]
    return None


class TreeSpec:
    """The shape of a tree without its leaves: the container type, its context (keys) and its children's specs."""

    def __init__(self, type: Any, context: Any, children_specs: list[TreeSpec]) -> None:
        self.type, self.context, self.children_specs = type, context, children_specs
        self.num_leaves: int = sum(c.num_leaves for c in children_specs)
        self.num_nodes: int = 1 + sum(c.num_nodes for c in children_specs)
        self.num_children = len(children_specs)

    def is_leaf(self) -> bool:
        """True for the spec of a single leaf."""
        return False

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TreeSpec) and other.is_leaf() == self.is_leaf() and self.type == other.type
                and self.context == other.context and self.children_specs == other.children_specs)  # fmt: skip

    def __hash__(self) -> int:
        return hash((self.type, self.num_nodes, self.num_leaves))

    def __repr__(self, indent: int = 0) -> str:
        name = self.type.__name__
        kids = ",\n".join(" " * (indent + 2) + c.__repr__(indent + 2) for c in self.children_specs).lstrip()
        return f"TreeSpec({name}, {self.context}, [{kids}])"

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """The tree of this shape holding ``leaves``."""
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to "
                             f"a pytree that holds {self.num_leaves} items ({self!r}).")  # fmt: skip
        return self._build(iter(leaves))

    def _build(self, it: Any) -> Any:
        children = [c._build(it) for c in self.children_specs]
        node = SUPPORTED_NODES[self.type]
        return node.unflatten(children, self.context)


class LeafSpec(TreeSpec):
    """The spec of one leaf (printed ``*``)."""

    def __init__(self) -> None:
        super().__init__(None, None, [])
        self.num_leaves, self.num_nodes = 1, 1

    def is_leaf(self) -> bool:
        """True: a leaf."""
        return True

    def __repr__(self, indent: int = 0) -> str:
        return "*"

    def _build(self, it: Any) -> Any:
        return next(it)


_LEAF = LeafSpec()


def tree_is_leaf(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if ``tree`` is not a registered container (or ``is_leaf`` says so)."""
    return (is_leaf is not None and is_leaf(tree)) or _node_of(tree) is None


def _flatten(tree: Any, is_leaf: Callable[[Any], bool] | None, out: list[Any]) -> TreeSpec:
    found = None if is_leaf is not None and is_leaf(tree) else _node_of(tree)
    if found is None:
        out.append(tree)
        return _LEAF
    kind, node = found
    children, context = node.flatten(tree)
    return TreeSpec(kind, context, [_flatten(c, is_leaf, out) for c in children])


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], TreeSpec]:
    """The leaves of ``tree`` in order, and its spec (``tree_unflatten(leaves, spec)`` rebuilds it)."""
    leaves: list[Any] = []
    return leaves, _flatten(tree, is_leaf, leaves)


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> Any:
    """The tree of ``treespec``'s shape holding ``leaves``."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got "
                        f"item of type {type(treespec)}.")  # fmt: skip
    return treespec.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of ``tree`` in order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_iter(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> Iterable[Any]:
    """An iterator over the leaves of ``tree``."""
    return iter(tree_leaves(tree, is_leaf))


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> TreeSpec:
    """The spec of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable[..., Any], tree: Any, *rests: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """A tree of ``tree``'s shape holding ``func(leaf, *leaves of rests at the same place)``."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = []
    for r in rests:
        lv, rs = tree_flatten(r, is_leaf)
        if rs != spec:
            raise ValueError(f"tree_map: the trees differ in structure: {spec!r} and {rs!r}")
        others.append(lv)
    return spec.unflatten(func(*xs) for xs in zip(leaves, *others, strict=True))


def tree_map_(func: Callable[..., Any], tree: Any, *rests: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Call ``func`` on each leaf (for its side effects, e.g. an in-place op) and return ``tree``."""
    tree_map(func, tree, *rests, is_leaf=is_leaf)
    return tree


def _only(types: type | tuple[type, ...], func: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda x: func(x) if isinstance(x, types) else x


def tree_map_only(types: type | tuple[type, ...], func: Callable[[Any], Any], tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None) -> Any:  # fmt: skip
    """``tree_map`` applying ``func`` only to leaves of ``types`` (the rest stay)."""
    return tree_map(_only(types, func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if ``pred`` holds for every leaf."""
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if ``pred`` holds for some leaf."""
    return any(map(pred, tree_leaves(tree, is_leaf)))


def tree_all_only(types: type | tuple[type, ...], pred: Callable[[Any], bool], tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None) -> bool:  # fmt: skip
    """True if ``pred`` holds for every leaf of ``types``."""
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, types))


def tree_any_only(types: type | tuple[type, ...], pred: Callable[[Any], bool], tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None) -> bool:  # fmt: skip
    """True if ``pred`` holds for some leaf of ``types``."""
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, types))


def _with_path(tree: Any, is_leaf: Callable[[Any], bool] | None, path: tuple[Any, ...], out: list[Any]) -> None:
    found = None if is_leaf is not None and is_leaf(tree) else _node_of(tree)
    if found is None:
        out.append((path, tree))
        return
    node = found[1]
    for k, child in zip(node.keys(tree), node.flatten(tree)[0], strict=True):
        _with_path(child, is_leaf, (*path, k), out)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None,
                           ) -> tuple[list[tuple[tuple[Any, ...], Any]], TreeSpec]:  # fmt: skip
    """``(key path, leaf)`` pairs in order, and the spec."""
    out: list[Any] = []
    _with_path(tree, is_leaf, (), out)
    return out, tree_structure(tree, is_leaf)


def tree_map_with_path(func: Callable[..., Any], tree: Any, *rests: Any,
                       is_leaf: Callable[[Any], bool] | None = None) -> Any:  # fmt: skip
    """``tree_map`` whose ``func`` also receives each leaf's key path first."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    others = [tree_leaves(r, is_leaf) for r in rests]
    return spec.unflatten(func(p, x, *xs) for (p, x), *xs in zip(pairs, *others, strict=True))
