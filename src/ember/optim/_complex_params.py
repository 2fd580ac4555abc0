"""Complex parameters in the optimizers, as PyTorch's: each is updated as pairs of real numbers (its real and
imaginary parts independently, through ``view_as_real``: Adam's second moment is per part, not ``|g|^2``), while
its state stays complex in ``state_dict``, as PyTorch keeps it."""

from __future__ import annotations

from typing import Any

from ._state import _is_array

__all__ = ["as_complex_state", "as_real", "as_real_state", "is_complex"]


def is_complex(backend: Any, a: Any) -> bool:
    return bool(backend.dtype_of(a).is_complex)


def as_real(backend: Any, a: Any) -> Any:
    """``a``'s memory as reals with a last dim of 2 (a view), when ``a`` is complex."""
    return backend.view_as_real(a) if is_complex(backend, a) else a


def as_real_state(backend: Any, st: dict[str, Any]) -> dict[str, Any]:
    """A complex parameter's state with its complex arrays viewed as reals, for the update."""
    return {k: as_real(backend, v) if _is_array(v) else v for k, v in st.items()}


def as_complex_state(backend: Any, st: dict[str, Any], real_shape: tuple[int, ...]) -> dict[str, Any]:
    """The state after the update: arrays shaped as the parameter's real view read as complex again."""
    out = {}
    for k, v in st.items():
        if _is_array(v) and tuple(v.shape) == real_shape and not is_complex(backend, v):
            v = backend.view_as_complex(backend.xp.ascontiguousarray(v))
        out[k] = v
    return out
