"""Nested state (optimizer/scheduler ``state_dict``s) <-> Record: tensors become items, the rest JSON meta."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._tensor import Tensor
from ._record import Item, Record

__all__ = ["record_to_state", "state_to_record"]


def state_to_record(state: Any, item_type: str) -> Record:
    """Flatten ``state``: every Tensor becomes an item named by its path; the structure goes to ``meta``."""
    items: dict[str, Item] = {}

    def walk(v: Any, path: str) -> Any:
        if isinstance(v, Tensor):
            items[path] = Item(v.detach(), "", "state")
            return {"__tensor__": path}
        if isinstance(v, dict):
            return {"__dict__": [[_key(k), walk(x, f"{path}.{k}" if path else str(k))] for k, x in v.items()]}
        if isinstance(v, (list, tuple)):
            return {"__list__": [walk(x, f"{path}.{i}" if path else str(i)) for i, x in enumerate(v)],
                    "tuple": isinstance(v, tuple)}  # fmt: skip
        if isinstance(v, np.generic):
            return v.item()
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        raise TypeError(f"cannot save state of type {type(v).__name__} at {path!r}")

    meta = {"state": walk(state, "")}
    return Record(items, item_type, meta)


def _key(k: Any) -> Any:
    if isinstance(k, (str, int)):
        return k
    raise TypeError(f"state keys must be str or int, got {type(k).__name__}")


def record_to_state(record: Record) -> Any:
    def build(v: Any) -> Any:
        if isinstance(v, dict):
            if "__tensor__" in v:
                return record[v["__tensor__"]]
            if "__dict__" in v:
                return {k: build(x) for k, x in v["__dict__"]}
            if "__list__" in v:
                out = [build(x) for x in v["__list__"]]
                return tuple(out) if v.get("tuple") else out
        return v

    return build(record.meta["state"])
