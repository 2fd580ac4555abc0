"""Training: the Learner, its metrics, callbacks and loggers."""

from .learner import Callback, EarlyStopping, Learner, NonFiniteLossError
from .loggers import CSVLogger, Logger, TensorBoardLogger
from .metrics import Accuracy, EpochTime, LearningRate, Loss, Metric, SamplesPerSecond, TopKAccuracy, get_metric

__all__ = [
    "Accuracy", "CSVLogger", "Callback", "EarlyStopping", "EpochTime", "Learner", "LearningRate", "Logger", "Loss",
    "Metric", "NonFiniteLossError", "SamplesPerSecond", "TensorBoardLogger", "TopKAccuracy", "get_metric",
]  # fmt: skip
