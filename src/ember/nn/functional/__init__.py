"""Neural-network functions with PyTorch's ``torch.nn.functional`` names.

One module per family; each lists its functions in ``__all__`` and this package re-exports them.
"""

from ...ops._elementwise import relu, sigmoid, tanh  # noqa: F401
from . import _basic
from ._basic import *  # noqa: F403

_MODULES = (_basic,)

__all__ = sorted({"relu", "sigmoid", "tanh", *(n for m in _MODULES for n in m.__all__)})
