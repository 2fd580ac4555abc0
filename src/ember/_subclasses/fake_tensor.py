"""``ember._subclasses.fake_tensor`` (PyTorch's ``torch._subclasses.fake_tensor``): ``is_fake`` for the libraries
that branch on it (kornia's distance transform). PyTorch's compiler traces with FakeTensors (shapes, dtypes and
devices without data); ``ember.compile`` captures a step by running it on real tensors, so no Ember tensor is ever
fake and ``is_fake`` is False for everything."""

from __future__ import annotations

from typing import Any

__all__ = ["is_fake"]


def is_fake(x: Any) -> bool:
    """Whether ``x`` is a fake tensor (data-less, made while tracing): never on Ember."""
    return False
