"""``ember.nn.parallel`` (PyTorch's ``torch.nn.parallel``): ``DistributedDataParallel``, ``DataParallel``.

``DataParallel`` wraps a module on the CPU or one GPU, as PyTorch's does there; across several devices in one
process it is refused: one process per device with DDP is the design (as PyTorch recommends), started by
``torchrun`` or ``ember.multiprocessing.spawn``.
"""

from . import distributed
from ._sync_batchnorm import SyncBatchNorm
from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "SyncBatchNorm", "distributed"]
