"""``ember.utils.data``: ``torch.utils.data``'s path for ``ember.data`` (datasets, samplers, DataLoader).

``ember.utils.data.dataset``, ``.dataloader``, ``.sampler``, ``.distributed`` and ``._utils.collate`` are
importable too; they are Ember's ``ember.data`` modules under PyTorch's names.
"""

import sys

from ...data import *  # noqa: F403
from ...data import __all__ as __all__
from ...data import _utils, dataloader, dataset, sampler

distributed = sampler
for _name, _mod in (("dataset", dataset), ("dataloader", dataloader), ("sampler", sampler),
                    ("distributed", sampler), ("_utils", _utils), ("_utils.collate", _utils.collate)):  # fmt: skip
    sys.modules[f"{__name__}.{_name}"] = _mod
