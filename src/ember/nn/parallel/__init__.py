"""``ember.nn.parallel`` (PyTorch's ``torch.nn.parallel``): ``DistributedDataParallel`` and ``DataParallel``.

One process per device with DDP is the design (as PyTorch recommends), started by ``torchrun`` or
``ember.multiprocessing.spawn``. ``DataParallel`` is there for the programs that wrap a model in it: it runs the
module on one device and does not split a batch over several (``data_parallel.py``).
"""

from . import distributed
from ._sync_batchnorm import SyncBatchNorm
from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "SyncBatchNorm", "distributed"]
