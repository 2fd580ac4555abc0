"""Error types that both Python and PyTorch code can catch.

PyTorch raises ``RuntimeError`` for shape, dtype and device problems; Python's convention is
``ValueError`` (a bad value) and ``TypeError`` (a bad type). Ember's errors are both, so
``except RuntimeError`` (PyTorch code) and ``except ValueError`` (Python code) each catch them.
"""

from __future__ import annotations

__all__ = [
    "EmberError",
    "ShapeError",
    "DTypeError",
    "DeviceError",
    "OutOfRangeError",
    "ValueRangeError",
    "DivisionByZeroError",
    "LinAlgError",
    "OutOfMemoryError",
]


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


class ValueRangeError(EmberError, ValueError):
    """A value outside what the operation or dtype accepts (300 for int8, NaN for an integer, a target above 1)."""


class DivisionByZeroError(EmberError, ZeroDivisionError):
    """Integer division or remainder by zero (PyTorch raises a ``RuntimeError`` saying ZeroDivisionError)."""


class LinAlgError(ValueRangeError):
    """A linear-algebra routine failed on its input: a singular matrix, one that is not positive-definite, a
    decomposition that did not converge (PyTorch's ``torch.linalg.LinAlgError``, also a ``RuntimeError``)."""


class OutOfMemoryError(EmberError, MemoryError):
    """A device ran out of memory (PyTorch's ``torch.OutOfMemoryError``, a ``RuntimeError``; also a ``MemoryError``,
    what NumPy raises)."""
