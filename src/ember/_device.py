"""Devices: ``ember.device("cpu")``, ``ember.device("cuda:0")``."""

from __future__ import annotations

from typing import Any

__all__ = ["device"]


class device:  # noqa: N801 - PyTorch's name
    """Where a tensor's memory lives: a type (``cpu`` or ``cuda``) and an index."""

    __slots__ = ("index", "type")

    def __init__(self, spec: Any, index: int | None = None):
        if isinstance(spec, device):
            self.type: str = spec.type
            self.index: int | None = spec.index
            return
        text = str(spec)
        kind, _, idx = text.partition(":")
        if kind not in ("cpu", "cuda"):
            raise ValueError(f"unknown device {text!r}; expected 'cpu', 'cuda' or 'cuda:N'")
        if idx:
            if not idx.isdigit():
                raise ValueError(f"bad device index in {text!r}; expected 'cuda:N' with N >= 0")
            index = int(idx)
        if kind == "cuda" and index is None:
            index = 0
        self.type = kind  # type: ignore[has-type]
        self.index = index  # type: ignore[has-type]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"device(type='{self.type}'" + ("" if self.index is None else f", index={self.index}") + ")"


CPU = device("cpu")
