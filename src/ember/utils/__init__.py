"""``ember.utils``: the paths PyTorch programs import from (``torch.utils.data``, ``torch.utils.checkpoint``, ...)."""

from .._tensor_extras import swap_tensors
from . import _pytree, benchmark, checkpoint, data, dlpack, hooks

__all__ = ["_pytree", "benchmark", "checkpoint", "data", "dlpack", "hooks", "swap_tensors"]
