"""``ember.utils``: the paths PyTorch programs import from (``torch.utils.data``, ``torch.utils.checkpoint``, ...)."""

from . import checkpoint, data, hooks

__all__ = ["checkpoint", "data", "hooks"]
