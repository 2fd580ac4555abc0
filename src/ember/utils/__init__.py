"""``ember.utils``: the paths PyTorch programs import from (``torch.utils.data``)."""

from . import data

__all__ = ["data"]
