"""``torch.distributed.tensor``'s type: ``DTensor``, a tensor sharded over a device mesh.

Ember does not shard tensors across processes (data-parallel training replicates whole tensors, see
``ember.distributed``), so no Ember tensor is a ``DTensor``: libraries that ask ``isinstance(p, DTensor)`` (accelerate
before placing a model) get False, and making one raises a RuntimeError that says so.
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor

__all__ = ["DTensor"]

_NONE = (
    "Ember has no distributed tensors (DTensor): it does not shard a tensor over a device mesh; "
    "use ember.distributed's data-parallel training (whole tensors on each process)"
)


class DTensor(Tensor):
    """PyTorch's sharded tensor type; Ember never makes one (``isinstance(t, DTensor)`` is False for its tensors)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> DTensor:
        raise RuntimeError(_NONE)

    @classmethod
    def from_local(cls, *args: Any, **kwargs: Any) -> DTensor:
        """Refused: Ember does not shard tensors (RuntimeError)."""
        raise RuntimeError(_NONE)
