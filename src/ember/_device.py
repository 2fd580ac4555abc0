"""Devices: ``ember.device("cpu")``, ``ember.device("cuda:0")``."""

from __future__ import annotations

from typing import Any

from ._errors import DeviceError

__all__ = ["device"]


class device:  # noqa: N801 - PyTorch's name
    """Where a tensor's memory lives: a type (``cpu`` or ``cuda``) and an index.

    A tensor's ``.device`` also remembers which backend serves it (``backend``), so that
    ``zeros(3, device=x.device)`` and ``y.to(x.device)`` land next to ``x``; a device you make yourself
    has ``backend=None`` and is served by the backend selected for its type (``ember.backends.use``).
    Equality and hashing look only at the type and index, as in PyTorch.
    """

    __slots__ = ("backend", "index", "type")

    def __init__(self, spec: Any, index: int | None = None):
        self.backend: str | None = None
        if isinstance(spec, device):
            self.type: str = spec.type
            self.index: int | None = spec.index
            self.backend = spec.backend
            return
        if isinstance(spec, int) and not isinstance(spec, bool):  # device(0) is cuda:0, as in PyTorch
            spec, index = "cuda", spec
        elif spec.__class__.__name__ == "device" and hasattr(spec, "type"):  # a torch.device
            spec, index = spec.type, getattr(spec, "index", None)
        text = str(spec)
        kind, _, idx = text.partition(":")
        if kind not in ("cpu", "cuda"):
            known = kind in ("mps", "xla", "xpu", "meta", "hip", "ipu", "hpu", "mtia", "vulkan", "privateuseone")
            raise DeviceError(
                f"device {text!r} is not supported by Ember; it has 'cpu', 'cuda' and 'cuda:N'"
                if known
                else f"unknown device {text!r}; expected 'cpu', 'cuda' or 'cuda:N'"
            )
        if idx:
            if not idx.isdigit():
                raise DeviceError(f"bad device index in {text!r}; expected 'cuda:N' with N >= 0")
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

    def served_by(self, backend: str) -> device:
        """This device, marked as served by ``backend`` (what a tensor's ``.device`` returns)."""
        d = device(self)
        d.backend = backend
        return d


CPU = device("cpu")
