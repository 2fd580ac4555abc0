"""The torch backend: torch tensors as Ember's arrays (``backend.py``), NumPy's names over torch (``xp.py``, the
operators' namespace), and torch's native kernels for the backend methods (``kernels.py``, ``array_kernels.py``).

Importing this package does not import torch; ``backend.TorchBackend`` does.
"""
