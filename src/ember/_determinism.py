"""``ember.use_deterministic_algorithms``: PyTorch's switch for reproducible kernels.

NumPy's kernels are deterministic already (threaded optimizer steps are bit-identical). On the torch
backend the switch is torch's own (set at once when torch is imported, else when the torch backend is
created), so torch's checks and deterministic kernels apply. On CuPy the one kernel whose result depends on
thread timing, ``index_add`` (float atomics, behind indexing gradients and embeddings), runs through the
host instead while the switch is on.
"""

from __future__ import annotations

import sys

__all__ = [
    "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled",
    "use_deterministic_algorithms",
]

_STATE = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Use deterministic kernels where a backend has a choice (see the module doc)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms: mode must be a bool, got {type(mode).__name__} {mode!r}")
    _STATE["mode"], _STATE["warn_only"] = mode, bool(warn_only)
    apply_to_torch()


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` is in effect (``torch.are_deterministic_algorithms_enabled``)."""
    return _STATE["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether nondeterministic operators only warn instead of raising (``warn_only=True``)."""
    return _STATE["warn_only"]


def apply_to_torch() -> None:
    """Give torch the switch (when torch is imported; the torch backend calls this when it is created)."""
    if "torch" not in sys.modules:  # never imported just for the switch
        return
    from .backends import real_torch

    torch = real_torch()  # None when "torch" names something else here (an alias of Ember)
    if torch is None:
        return
    mode, warn_only = _STATE["mode"], _STATE["warn_only"]
    # only a change: torch's setter imports torch._inductor (with dynamo and sympy, ~70 MB of a process's memory)
    if torch.are_deterministic_algorithms_enabled() != mode or (
        mode and torch.is_deterministic_algorithms_warn_only_enabled() != warn_only
    ):
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
