"""``ember.backends.mps``: Apple's Metal devices. No Ember backend serves them (yet), so both answers are False."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: no Ember backend serves an ``mps`` device."""
    return False


def is_built() -> bool:
    """False: Ember has no MPS backend."""
    return False
