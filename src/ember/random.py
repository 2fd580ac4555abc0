"""PyTorch's ``torch.random``: seeding and the state of Ember's default generator, and ``fork_rng``.

One seeded generator serves every device (the torch backend seeds its device generators from it), so
``fork_rng`` saves and restores that one state whatever ``devices`` it is given.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterable
from typing import Any

from ._creation import default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state

__all__ = ["default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(
    devices: Iterable[Any] | None = None,
    enabled: bool = True,
    _caller: str = "fork_rng",
    _devices_kw: str = "devices",
    device_type: str | None = None,
) -> Generator[None, None, None]:
    """A block after which the random state is what it was before it (also when the block raises): draws and
    seeds inside do not change the numbers drawn after it. ``enabled=False``: a plain block."""
    # (``devices`` and ``device_type`` select nothing: one generator serves every device)
    if not enabled:
        yield
        return
    state = default_generator.get_state()
    try:
        yield
    finally:
        default_generator.set_state(state)
