"""PyTorch's ``torch.fx.experimental``: ``optimization.fuse`` and ``optimization.remove_dropout``;
``proxy_tensor.get_proxy_mode`` (None: Ember has no ``make_fx``)."""

from __future__ import annotations

from . import optimization, proxy_tensor

__all__ = ["optimization", "proxy_tensor"]
