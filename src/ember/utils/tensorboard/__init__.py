"""``ember.utils.tensorboard``: ``torch.utils.tensorboard``'s ``SummaryWriter`` for Ember.

>>> from ember.utils.tensorboard import SummaryWriter
>>> with SummaryWriter("runs/exp1") as w:
...     w.add_scalar("loss/train", 0.25, global_step=1)

Then ``tensorboard --logdir runs``. Needs the ``tensorboard`` package: ``pip install 'ember[tensorboard]'``.
"""

from ._writer import SummaryWriter

__all__ = ["SummaryWriter"]
