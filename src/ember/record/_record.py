"""``Record``: one flat, versioned map from dotted paths to tensors, with param ids (spec: Record)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from .._tensor import Tensor
from ._load import IncompatibleKeys, load_values

__all__ = ["FORMAT_VERSION", "Item", "Record"]

#: bumped when the on-disk layout changes; readers refuse newer versions
FORMAT_VERSION = 1


@dataclasses.dataclass
class Item:
    """One saved tensor: held by reference (no copy), with its param id and kind."""

    tensor: Tensor
    id: str = ""
    kind: str = "param"  # "param", "buffer" or "state"


@dataclasses.dataclass
class Record:
    """A flat map ``path -> Item`` plus JSON metadata (``item_type``: "module", "optimizer", "checkpoint" ...)."""

    items: dict[str, Item] = dataclasses.field(default_factory=dict)
    item_type: str = "module"
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: True when the record owns its arrays (it was read from a file or bytes): loading may adopt them
    owned: bool = False

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[str]:
        return iter(self.items)

    def __contains__(self, key: object) -> bool:
        return key in self.items

    def __getitem__(self, key: str) -> Tensor:
        try:
            return self.items[key].tensor
        except KeyError:
            raise KeyError(f"record has no item {key!r}; it holds {len(self.items)} items") from None

    def tensors(self) -> dict[str, Tensor]:
        return {k: v.tensor for k, v in self.items.items()}

    def sub(self, prefix: str, item_type: str = "module") -> Record:
        """The items under ``prefix.`` with the prefix removed."""
        p = prefix + "."
        return Record({k[len(p) :]: v for k, v in self.items.items() if k.startswith(p)}, item_type, {})

    def merge(self, prefix: str, other: Record) -> None:
        """Add ``other``'s items under ``prefix.``."""
        for k, v in other.items.items():
            self.items[f"{prefix}.{k}"] = v

    @staticmethod
    def from_module(module: Any) -> Record:
        """Parameters and persistent buffers of ``module`` by dotted path (tensors by reference)."""
        items = {}
        for name, p in module._persistent_state():
            items[name] = Item(p.detach(), p.id, "buffer" if p.is_buffer else "param")
        return Record(items, "module", {"module": type(module).__name__})

    def load_into(
        self, module: Any, strict: bool = True, source: str = "record", assign: bool = False
    ) -> IncompatibleKeys:
        """Copy the items into ``module``'s parameters in place, converting dtype/device, restoring ids.

        With ``assign`` and a record that owns its arrays, matching arrays are adopted without a copy
        (``Config.init_with`` does this: the module's own arrays were never initialised).
        """
        values = {k: it.tensor for k, it in self.items.items()}
        ids = {k: it.id for k, it in self.items.items()}
        return load_values(module, values, source, strict, same_kind=True, ids=ids, assign=assign, owned=self.owned)
