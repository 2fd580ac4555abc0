"""Exact rewrites of a ``Sequential``'s layers while ``ember.compile`` records it: the recorded program, which
every replay runs, then does less work than eager, with the same bits.

One rewrite: a ``ReLU`` followed by a max pooling runs as the pooling followed by the ReLU, on the pooled
elements only (4x fewer behind a 2x2 pool, forward and backward). ``max`` and ``relu`` commute: the same
outputs (a window whose maximum is at most 0 gives +0.0 both ways, NumPy's ``maximum(-0.0, 0)`` being +0.0; a NaN
propagates both ways), and the same input gradient, bit for bit: a window whose maximum is above 0 has the same
first maximum in ``x`` and ``relu(x)`` and passes its gradient; any other window's gradient is masked to +0.0
(before the pooling's backward instead of after it), and the pooling backward writes every window's gradient
into zeros (the 2x2 scatter) or adds it there as a select (``_kernels_util.select_grad``). Only where that
holds as written: the NumPy backend, a floating-point input, no autocast region, exactly ``ReLU`` (not in place) and
``MaxPool1d/2d/3d`` (no subclass, no hooks, no ``return_indices``). LeNet-5's compiled step, one thread:
4.53 -> 4.21 ms (issue 28's session 15).
Eager keeps PyTorch's order: there the ReLU's output is a tensor of the graph (``grad_fn`` and hooks see it).
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..autograd import _autocast
from ..autograd._capture import CAPTURE
from ._module_hooks import GLOBAL_FWD, GLOBAL_PRE
from .module import Module

__all__ = ["run_recorded"]

_KINDS: list[Any] = []  # [ReLU, (MaxPool1d, MaxPool2d, MaxPool3d)], on first use (container.py comes first)


def _kinds() -> list[Any]:
    if not _KINDS:
        from .activation import ReLU
        from .layers import MaxPool1d, MaxPool2d
        from .pooling import MaxPool3d

        _KINDS[:] = [ReLU, (MaxPool1d, MaxPool2d, MaxPool3d)]
    return _KINDS


def _plain(m: Module) -> bool:
    """No hooks of any kind (the global forward hooks included), and no ``forward`` set on the instance."""
    return not (m._pre_hooks or m._fwd_hooks or m._bwd_hooks or GLOBAL_PRE or GLOBAL_FWD or "forward" in m.__dict__)


def _pool_first(a: Module, b: Module, x: Any) -> bool:
    """Whether ``b(a(x))`` may run as ``a(b(x))`` (see the module docstring)."""
    relu, pools = _KINDS or _kinds()
    return (
        type(a) is relu
        and not a.inplace  # (in place, eager writes into ``x``, which may be the caller's tensor)
        and type(b) in pools
        and not b.return_indices
        and isinstance(x, Tensor)
        and x._backend.name == "numpy"
        and x._data.dtype.kind == "f"
        and not _autocast.ACTIVE[0]
        and _plain(a)
        and _plain(b)
        and CAPTURE.tracer is not None
        and CAPTURE.tracer.here()
    )


def run_recorded(modules: list[Module], x: Any) -> Any:
    """``Sequential.forward`` while ``ember.compile`` records: the modules in order, each ReLU followed by a max
    pooling run pool first."""
    i, n = 0, len(modules)
    while i < n:
        m = modules[i]
        if i + 1 < n and _pool_first(m, modules[i + 1], x):
            x = m(modules[i + 1](x))
            i += 2
        else:
            x = m(x)
            i += 1
    return x
