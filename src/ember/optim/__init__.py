"""Optimizers with serializable state, hooks and gradient clipping; ``lr_scheduler`` for learning rates."""

from . import lr_scheduler, swa_utils
from ._algorithms import LAMB, SGD, Adadelta, Adagrad, Adam, Adamax, AdamW, Lion, NAdam, RAdam, RMSprop
from ._algorithms_more import ASGD, Adafactor, Rprop
from ._base import Optimizer
from .lbfgs import LBFGS
from .optimizer import OptimizerAdaptor, SimpleOptimizer, WeightDecay

__all__ = [
    "ASGD", "Adafactor", "LAMB", "LBFGS", "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "Lion", "NAdam",
    "Optimizer", "OptimizerAdaptor", "RAdam", "RMSprop", "Rprop", "SimpleOptimizer", "WeightDecay", "lr_scheduler",
    "swa_utils",
]  # fmt: skip
