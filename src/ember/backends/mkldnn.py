"""``ember.backends.mkldnn`` (PyTorch's ``torch.backends.mkldnn``): whether oneDNN serves CPU kernels. Ember's
kernels are its backends' own (NumPy's, or PyTorch's behind the torch backend), never oneDNN called by Ember, so
``is_available()`` is False; ``enabled`` is kept as set, for the programs that switch it."""

from __future__ import annotations

__all__ = ["enabled", "is_available"]

#: PyTorch's switch for oneDNN kernels (True by default there); nothing in Ember reads it
enabled = True


def is_available() -> bool:
    """False: Ember calls no oneDNN kernels."""
    return False
