"""The torch backend's old address (``ember.backends.torch_backend``); the backend lives in ``backends/torch/``."""

from .torch.backend import TorchBackend, cuda_reason

__all__ = ["TorchBackend", "cuda_reason"]
