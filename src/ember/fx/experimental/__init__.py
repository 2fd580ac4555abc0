"""PyTorch's ``torch.fx.experimental``: ``optimization.fuse`` and ``optimization.remove_dropout``."""

from __future__ import annotations

from . import optimization

__all__ = ["optimization"]
