"""``torch.utils.data._utils``' path: ``collate`` (PyTorch's extensible collation)."""

from . import collate

__all__ = ["collate"]
