"""``ember.utils.hooks`` (PyTorch's ``torch.utils.hooks``): the handle that hook registrations return."""

from __future__ import annotations

from .._hooks import RemovableHandle

__all__ = ["RemovableHandle"]
