"""``ember.nn.parallel`` (PyTorch's ``torch.nn.parallel``): ``DistributedDataParallel``.

There is no single-process multi-device ``DataParallel``: one process per device with DDP is the design
(as PyTorch recommends), started by ``torchrun`` or ``ember.multiprocessing.spawn``.
"""

from . import distributed
from ._sync_batchnorm import SyncBatchNorm
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel", "SyncBatchNorm", "distributed"]
