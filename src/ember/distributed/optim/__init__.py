"""``ember.distributed.optim``: optimizers for distributed training (ZeRO stage 1)."""

from ._zero import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
