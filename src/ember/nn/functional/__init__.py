"""Neural-network functions with PyTorch's ``torch.nn.functional`` names.

One module per family; each lists its functions in ``__all__`` and this package re-exports them.
"""

from ...ops._other_shape import pad  # noqa: F401
from ...ops._pointwise_unary import sigmoid, tanh  # noqa: F401
from . import (
    _activation,
    _attention,
    _bags,
    _basic,
    _conv,
    _ctc,
    _distance,
    _grid,
    _loss,
    _loss_margin,
    _misc,
    _norm,
    _pool,
    _pool_lp,
    _sdpa,
    _unpool,
)
from ._activation import *  # noqa: F403
from ._attention import *  # noqa: F403
from ._bags import *  # noqa: F403
from ._basic import *  # noqa: F403
from ._conv import *  # noqa: F403
from ._ctc import *  # noqa: F403
from ._distance import *  # noqa: F403
from ._grid import *  # noqa: F403
from ._loss import *  # noqa: F403
from ._loss_margin import *  # noqa: F403
from ._misc import *  # noqa: F403
from ._norm import *  # noqa: F403
from ._pool import *  # noqa: F403
from ._pool_lp import *  # noqa: F403
from ._sdpa import *  # noqa: F403
from ._unpool import *  # noqa: F403

_MODULES = (_activation, _attention, _bags, _basic, _conv, _ctc, _distance, _grid, _loss, _loss_margin, _misc,
            _norm, _pool, _pool_lp, _sdpa, _unpool)  # fmt: skip

__all__ = sorted({"pad", "sigmoid", "tanh", *(n for m in _MODULES for n in m.__all__)})
