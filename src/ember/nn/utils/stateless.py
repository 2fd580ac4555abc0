"""``torch.nn.utils.stateless``: the older home of ``functional_call`` (now ``ember.func.functional_call``)."""

from __future__ import annotations

import warnings
from typing import Any

from ...func import functional_call as _functional_call

__all__ = ["functional_call"]


def functional_call(module: Any, parameters_and_buffers: Any, args: Any = None, kwargs: dict[str, Any] | None = None,
                    *, tie_weights: bool = True, strict: bool = False) -> Any:  # fmt: skip
    """``ember.func.functional_call`` with PyTorch's deprecation warning for this name."""
    warnings.warn("nn.utils.stateless.functional_call is deprecated: use torch.func.functional_call instead",
                  FutureWarning, stacklevel=2)  # fmt: skip
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
