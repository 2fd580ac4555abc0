"""``ember.utils.data``: ``torch.utils.data``'s path for ``ember.data`` (datasets, samplers, DataLoader).

``ember.utils.data.dataset``, ``.dataloader``, ``.sampler`` and ``.distributed`` are importable too;
they are Ember's ``ember.data`` modules under PyTorch's names.
"""

import sys

from ...data import *  # noqa: F403
from ...data import __all__ as __all__
from ...data import dataloader, dataset, sampler

distributed = sampler
for _name, _mod in (("dataset", dataset), ("dataloader", dataloader), ("sampler", sampler),
                    ("distributed", sampler)):  # fmt: skip
    sys.modules[f"{__name__}.{_name}"] = _mod
