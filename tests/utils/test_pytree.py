"""``ember.utils._pytree`` against ``torch.utils._pytree``: the same program under both, the same printed results."""

from __future__ import annotations

import collections
import dataclasses
import importlib
import warnings

import pytest

torch = pytest.importorskip("torch")


def _run(libname: str) -> list[str]:
    p = importlib.import_module(libname + ".utils._pytree")
    said: list[str] = []

    def say(*args: object) -> None:
        said.append(" ".join(str(a) for a in args).replace("torch", "X").replace("ember", "X"))

    NT = collections.namedtuple("NT", "x y")
    trees = [
        None,
        1,
        [1, (2, None)],
        {"b": 1, "a": [2, (3, None)]},
        NT(1, [2]),
        collections.OrderedDict(a=1, b=(2,)),
        collections.defaultdict(list, {"k": [1, 2]}),
        collections.deque([1, 2], maxlen=3),
        [],
        {},
        ((),),
        importlib.import_module(libname).Size([2, 3]),  # a node (of int leaves) unflattening to a tuple
        (importlib.import_module(libname).zeros(4, 5).shape, [1]),
    ]
    for t in trees:
        leaves, s = p.tree_flatten(t)
        r = p.tree_unflatten([x * 10 if isinstance(x, int) else x for x in leaves], s)
        say(
            leaves,
            repr(s).replace("torch", "X").replace("ember", "X"),
            s.num_leaves,
            s.num_nodes,
            r,
            type(r).__name__,
            s.is_leaf(),
        )
        say(p.tree_map(lambda x: x, t) == t, p.tree_leaves(t), p.tree_structure(t) == s)
        say([(p.keystr(k), v) for k, v in p.tree_flatten_with_path(t)[0]])
    say(p.tree_map(lambda a, b: a + b, [1, {"q": 2}], [10, {"q": 20}]))
    say(p.tree_map_only(int, lambda a: a * 2, [1, "s", 2.0, (3,)]))
    say(p.tree_all(lambda x: x > 0, [1, 2]), p.tree_any(lambda x: x > 1, [1, [2]]), p.tree_all_only(str, len, [1, "a"]))
    say(p.tree_flatten([1, [2, 3]], is_leaf=lambda x: isinstance(x, list) and len(x) == 2 and x[0] == 2)[0])
    say(p.tree_map_with_path(lambda k, x: p.keystr(k) + str(x), {"a": [1, NT(2, 3)]}))
    for bad in [
        lambda: p.tree_unflatten([1], p.tree_structure([1, 2])),
        lambda: p.tree_map(lambda a, b: a, [1, 2], [1]),
        lambda: p.tree_unflatten([1], [1]),
    ]:
        try:
            bad()
        except Exception as e:
            say(type(e).__name__)

    class Pt:
        def __init__(self, a, b):
            self.a, self.b = a, b

    p.register_pytree_node(Pt, lambda x: ([x.a, x.b], "ctx"), lambda c, ctx: Pt(*c))
    leaves, s = p.tree_flatten([Pt(1, [2])])
    say(leaves, s.num_leaves, p.tree_unflatten([5, 6], s)[0].b)
    try:
        p.register_pytree_node(Pt, lambda x: ([], None), lambda c, ctx: None)
    except Exception as e:
        say(type(e).__name__)

    @dataclasses.dataclass
    class D:
        u: int
        v: list

    p.register_dataclass(D)
    say(
        p.tree_leaves(D(1, [2])),
        p.tree_map(lambda x: x + 1, D(1, [2])),
        [p.keystr(k) for k, _ in p.tree_flatten_with_path(D(1, [2]))[0]],
    )

    class Out(dict):  # a ModelOutput-like dict subclass, registered as Hugging Face registers its outputs
        pass

    p.register_pytree_node(
        Out,
        p._dict_flatten,
        lambda c, ks: Out(p._dict_unflatten(c, ks)),
        flatten_with_keys_fn=p._dict_flatten_with_keys,
    )
    pairs, spec = p.tree_flatten_with_path(Out(logits=1, hidden=[2, 3]))
    say([(p.keystr(k), v) for k, v in pairs], type(spec.unflatten([4, 5, 6])).__name__, spec.num_leaves)

    # the node API Lightning's own flattening uses: _get_node_type, SUPPORTED_NODES[...].flatten_fn, TreeSpec(...)
    def flatten(tree):
        kind = p._get_node_type(tree)
        if kind not in p.SUPPORTED_NODES:
            with warnings.catch_warnings():  # (PyTorch 2.13 deprecates making a LeafSpec; Lightning still does)
                warnings.simplefilter("ignore", FutureWarning)
                return [tree], p.LeafSpec()
        children, context = p.SUPPORTED_NODES[kind].flatten_fn(tree)
        flat, specs = [], []
        for c in children:
            f, sp = flatten(c)
            flat += f
            specs.append(sp)
        return flat, p.TreeSpec(kind, context, specs)

    for t in ([1, (2, NT(3, {"k": 4}))], NT([1], 2), {"a": collections.OrderedDict(b=1)}, 5):
        flat, sp = flatten(t)
        say(p._get_node_type(t) is collections.namedtuple, flat, sp == p.tree_structure(t), p.tree_unflatten(flat, sp))
        say(p.SUPPORTED_NODES[p._get_node_type(t)].unflatten_fn(*p.SUPPORTED_NODES[p._get_node_type(t)].flatten_fn(t))
            if p._get_node_type(t) in p.SUPPORTED_NODES else "leaf")  # fmt: skip
    say(p.PyTree, p.tree_structure(NT(1, 2)).type is collections.namedtuple)
    return said


def test_pytree_matches_torch():
    got, want = _run("ember"), _run("torch")
    assert len(got) == len(want) > 40
    for g, w in zip(got, want, strict=True):
        assert g == w
