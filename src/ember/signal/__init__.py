"""``ember.signal``: ``torch.signal`` (its ``windows`` module)."""

from __future__ import annotations

from . import windows

__all__ = ["windows"]
