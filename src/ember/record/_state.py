"""Nested state <-> Record: tensors become items, the structure goes to JSON ``meta["state"]``.

Optimizer/scheduler ``state_dict``s, checkpoints and whatever ``ember.save`` is given: dicts (key order,
and ``OrderedDict``), lists, tuples, tensors (``requires_grad``, parameters with their ids, device),
NumPy arrays, numbers, strings, bools and None; a meta tensor (no data) as its shape and dtype. A tensor
referenced twice is stored once and loads as one object. Anything else (a Module, a function, an arbitrary
class) is refused, naming its path: records hold no pickle (``ember.save`` pickles such objects next to the
record, ``_pickled.py``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from .._creation import empty, from_numpy
from .._param import Param
from .._size import Size
from .._tensor import Tensor
from ._record import Item, Record

__all__ = ["record_to_state", "state_to_record"]


def state_to_record(state: Any, item_type: str) -> Record:
    """Flatten ``state``: every Tensor becomes an item named by its path; the structure goes to ``meta``."""
    items: dict[str, Item] = {}
    seen: dict[int, tuple[Any, str]] = {}  # id(tensor) -> (tensor, item name): shared tensors are saved once

    def tensor_node(v: Any, path: str, ndarray: bool) -> dict[str, Any]:
        hit = seen.get(id(v))
        if hit is not None and hit[0] is v:
            return {"__tensor__": hit[1]}
        name = path
        while name in items:  # keys with dots ("a.b" beside a nested a -> b) must not collide
            name += "'"
        node: dict[str, Any] = {"__tensor__": name}
        seen[id(v)] = (v, name)
        if not ndarray and v.is_meta:  # no data: its shape and dtype only (PyTorch saves meta tensors so too)
            node["meta"] = {"shape": list(v.shape), "dtype": str(v.dtype)}
        else:
            t = from_numpy(np.ascontiguousarray(v)) if ndarray else v.detach()
            items[name] = Item(t, "", "state")
        if ndarray:
            node["ndarray"] = True
            return node
        if v.requires_grad:
            node["requires_grad"] = True
        if isinstance(v, Param):
            node["param"] = {"id": v.id, "buffer": v.is_buffer}
        if v.device.type != "cpu":
            node["device"] = str(v.device)
        return node

    def walk(v: Any, path: str) -> Any:
        if isinstance(v, Tensor):
            return tensor_node(v, path, False)
        if isinstance(v, np.ndarray):
            return tensor_node(v, path, True)
        if isinstance(v, dict):
            node: dict[str, Any] = {
                "__dict__": [[_key(k, path), walk(x, f"{path}.{k}" if path else str(k))] for k, x in v.items()]
            }
            if isinstance(v, OrderedDict):
                node["ordered"] = True
                meta = getattr(v, "_metadata", None)  # a state_dict's module versions (PyTorch keeps them)
                if isinstance(meta, dict):
                    node["_metadata"] = [[_key(k, path), _plain(x, f"{path}._metadata")] for k, x in meta.items()]
            return node
        if isinstance(v, (list, tuple)):
            node = {"__list__": [walk(x, f"{path}.{i}" if path else str(i)) for i, x in enumerate(v)],
                    "tuple": isinstance(v, tuple)}  # fmt: skip
            if type(v) is Size:  # a shape (x.shape, x.size()) comes back a Size, as from torch.load
                node["size"] = True
            return node
        if isinstance(v, np.generic):
            return v.item()
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        hint = " (save its state_dict() instead)" if hasattr(v, "state_dict") else ""
        where = path or "the top level"
        raise TypeError(f"cannot save an object of type {type(v).__name__} at {where!r}{hint}: Ember saves "
                        "tensors, arrays, numbers, strings, None and dicts/lists/tuples of them")  # fmt: skip

    meta = {"state": walk(state, "")}
    return Record(items, item_type, meta)


def _plain(v: Any, path: str) -> Any:
    """A JSON value (a state_dict's ``_metadata`` entry: ``{"version": 2}``), or a TypeError naming the path."""
    if isinstance(v, dict):
        return {str(_key(k, path)): _plain(x, path) for k, x in v.items()}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f"cannot save a {type(v).__name__} in {path!r}: metadata holds numbers, strings and dicts")


def _key(k: Any, path: str) -> Any:
    if isinstance(k, (str, int, float)) or k is None:
        return k
    raise TypeError(f"cannot save a dict key of type {type(k).__name__} at {path or 'the top level'!r}: "
                    "keys must be str, int, float, bool or None")  # fmt: skip


def record_to_state(record: Record, place: Callable[[Tensor, str], Tensor] | None = None) -> Any:
    """Rebuild what ``state_to_record`` flattened; ``place(tensor, saved_device)`` may move each tensor."""
    built: dict[str, Any] = {}

    def tensor(v: dict[str, Any]) -> Any:
        name = v["__tensor__"]
        if name in built:
            return built[name]
        m = v.get("meta")
        t = empty(m["shape"], dtype=m["dtype"], device="meta") if m is not None else record[name]
        if v.get("ndarray"):
            out: Any = t.numpy()
        else:
            if place is not None:
                t = place(t, v.get("device", "cpu"))
            p = v.get("param")
            if p is not None:
                out = Param(t, requires_grad=False, id=p.get("id"), is_buffer=bool(p.get("buffer")))
            else:
                out = t
            out.requires_grad = bool(v.get("requires_grad")) and out.dtype.is_floating_point
        built[name] = out
        return out

    def build(v: Any) -> Any:
        if isinstance(v, dict):
            if "__tensor__" in v:
                return tensor(v)
            if "__dict__" in v:
                pairs = [(k, build(x)) for k, x in v["__dict__"]]
                if not v.get("ordered"):
                    return dict(pairs)
                od: Any = OrderedDict(pairs)
                if "_metadata" in v:
                    od._metadata = OrderedDict((k, x) for k, x in v["_metadata"])
                return od
            if "__list__" in v:
                out = [build(x) for x in v["__list__"]]
                return (Size(out) if v.get("size") else tuple(out)) if v.get("tuple") else out
        return v

    return build(record.meta["state"])
