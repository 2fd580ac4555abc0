"""``ember.utils._pytree``: PyTorch's pytree helpers (``torch.utils._pytree``), kept in ``ember._pytree`` on the
bottom floor so that ``ember.func`` can use them."""

from .._pytree import *  # noqa: F403
from .._pytree import (  # noqa: F401
    SUPPORTED_NODES,
    __all__,
    _dict_flatten,
    _dict_flatten_with_keys,
    _dict_unflatten,
    _get_node_type,
)
