"""Training: the Learner, its metrics and callbacks."""

from .learner import Callback, EarlyStopping, Learner, NonFiniteLossError
from .metrics import Accuracy, EpochTime, LearningRate, Loss, Metric, SamplesPerSecond, TopKAccuracy, get_metric

__all__ = [
    "Accuracy", "Callback", "EarlyStopping", "EpochTime", "Learner", "LearningRate", "Loss", "Metric",
    "NonFiniteLossError", "SamplesPerSecond", "TopKAccuracy", "get_metric",
]  # fmt: skip
