"""Error types that both Python and PyTorch code can catch.

PyTorch raises ``RuntimeError`` for shape, dtype and device problems; Python's convention is
``ValueError`` (a bad value) and ``TypeError`` (a bad type). Ember's errors are both, so
``except RuntimeError`` (PyTorch code) and ``except ValueError`` (Python code) each catch them.
"""

from __future__ import annotations

__all__ = ["EmberError", "ShapeError", "DTypeError", "DeviceError", "OutOfRangeError"]


class EmberError(RuntimeError):
    """Base of Ember's own errors (a ``RuntimeError``, as PyTorch raises)."""


class ShapeError(EmberError, ValueError):
    """Shapes (or sizes, or dims) that do not fit the operation."""


class DTypeError(EmberError, TypeError):
    """A dtype the operation or backend cannot take."""


class DeviceError(EmberError, ValueError):
    """Tensors on different devices or backends, or a device/backend that is not available."""


class OutOfRangeError(EmberError, IndexError):
    """An index out of range (PyTorch raises ``IndexError`` or ``RuntimeError``; this is both)."""
