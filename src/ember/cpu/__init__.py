"""``ember.cpu``: ``torch.cpu``'s names (``ember.cpu.amp.autocast``)."""

from __future__ import annotations

from . import amp

__all__ = ["amp"]
