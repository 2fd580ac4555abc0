"""``ember.utils``: the paths PyTorch programs import from (``torch.utils.data``, ``torch.utils.checkpoint``, ...)."""

from . import _pytree, benchmark, checkpoint, data, dlpack, hooks

__all__ = ["_pytree", "benchmark", "checkpoint", "data", "dlpack", "hooks"]
