"""``ember.fx.experimental.proxy_tensor`` (PyTorch's ``torch.fx.experimental.proxy_tensor``): ``get_proxy_mode``
for the libraries that ask whether ``make_fx`` is tracing them. Ember has no ``make_fx`` (its ``fx.symbolic_trace``
records calls on ``Proxy`` objects, and ``ember.compile`` runs the step on real tensors), so no proxy mode is ever
active."""

from __future__ import annotations

__all__ = ["get_proxy_mode"]


def get_proxy_mode() -> None:
    """The active ``make_fx`` tracing mode: None, always (Ember has no ``make_fx``)."""
    return None
