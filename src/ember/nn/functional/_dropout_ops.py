"""Dropout as operators that keep only a bool mask: plain dropout, ReLU + dropout, and residual add + dropout.

The composite ``x * (rand >= p).to(dtype) * scale`` kept a float mask and its input alive until backward; these
keep one bool mask and nothing of the input (``release_values``: the node's inputs that backward never reads
become zero-strided stand-ins of the same shape and dtype, so the graph does not hold their arrays, as PyTorch's
nodes keep only what their backward needs). The mask is drawn by the backend's ``dropout_mask`` from Ember's
generator (:func:`keep_mask`): on NumPy/CuPy 32-bit integer draws against a threshold on Ember's kernel threads
(``backends/_kernels_random.py``), on torch ``rand(shape) >= p`` on the device.
"""

from __future__ import annotations

from typing import Any

from ..._creation import default_generator
from ..._tensor import Tensor
from ...autograd._function import Op
from ...autograd._grad_mode import STATE

__all__: list[str] = []


def release_values(out: Tensor, *idx: int) -> Tensor:
    """Make ``out``'s node forget the values of its inputs ``idx`` (which its backward never reads): each becomes
    a zero-strided stand-in with the shape, dtype and backend the engine checks gradients against."""
    node = out._creator
    if node is None or node.inputs is None:
        return out
    ins = list(node.inputs)
    for i in idx:
        t = ins[i]
        if isinstance(t, Tensor):
            xp = t._backend.xp
            stand_in = xp.broadcast_to(xp.zeros((), dtype=t._data.dtype), t._data.shape)
            ins[i] = Tensor._make(stand_in, t._backend)
    node.inputs = tuple(ins)
    return out


def keep_mask(like: Tensor, p: float, generator: Any = None, shape: tuple[int, ...] | None = None) -> Tensor:
    """Dropout's bool mask of the elements kept (each with probability ``1 - p``), of ``shape`` (default ``like``'s),
    on ``like``'s backend: ``Backend.dropout_mask`` drawn from ``generator`` (default: Ember's)."""
    gen = generator or default_generator
    be = like._backend
    with gen._lock:
        arr = be.dropout_mask(gen._rng, tuple(like.shape if shape is None else shape), p, like.dtype)
    return Tensor._make(arr, be)


def _scale(p: float) -> float:
    return 0.0 if p >= 1.0 else 1.0 / (1.0 - p)


class _MaskOp(Op):
    """Backward reads no input value (only the kept bool mask): ``g * mask * scale`` for the first input."""

    saves_inputs = False
    mask: Any
    scale: float

    def value_needed(self, i: int) -> bool:
        return False

    def _masked(self, g: Any) -> Any:
        gx = g * self.mask
        gx *= self.scale
        return gx

    def backward_arrays(self, g: Any) -> tuple[Any, ...]:
        return self._masked(g), None, None

    def backward(self, g: Tensor) -> tuple[Tensor | None, ...]:
        return g * Tensor._make(self.mask, self.backend) * self.scale, None, None


class DropoutMask(_MaskOp):
    """``x * keep * scale`` (``keep`` a bool mask)."""

    def forward(self, x: Any, keep: Any, scale: float) -> Any:
        self.mask, self.scale = keep, scale
        y = x * keep
        y *= scale
        return y


class ReluDropout(_MaskOp):
    """``relu(x) * keep * scale``; keeps ``keep & ~(x <= 0)`` (a NaN input passes its gradient, as PyTorch's
    ``threshold_backward`` on its NaN output)."""

    def forward(self, x: Any, keep: Any, scale: float) -> Any:
        xp = self.backend.xp
        self.mask, self.scale = xp.logical_and(keep, xp.logical_not(x <= 0)), scale
        y = xp.maximum(x, 0)
        y *= keep
        y *= scale
        return y


class DropoutAdd(_MaskOp):
    """``x + z * keep * scale`` (a residual connection around a dropped-out branch; ``keep`` None: ``x + z``)."""

    def forward(self, x: Any, z: Any, keep: Any, scale: float) -> Any:
        self.mask, self.scale = keep, scale
        if keep is None:
            return x + z
        y = z * keep
        y *= scale
        y += x
        return y

    def backward_arrays(self, g: Any) -> tuple[Any, ...]:
        return g, (g if self.mask is None else self._masked(g)), None, None

    def backward(self, g: Tensor) -> tuple[Tensor | None, ...]:
        gz = g if self.mask is None else g * Tensor._make(self.mask, self.backend) * self.scale
        return g, gz, None, None


def _fits(*ts: Any) -> bool:
    return all(isinstance(t, Tensor) and t.dtype.is_floating_point for t in ts)


def dropout_keep_bool(input: Tensor, p: float, generator: Any = None) -> Tensor | None:
    """Dropout (training, 0 < p < 1) as one node keeping a bool mask; None where the input is not floating."""
    if not _fits(input):
        return None
    return release_values(DropoutMask.apply(input, keep_mask(input, p, generator), _scale(p)), 0)


def relu_dropout(input: Tensor, p: float, training: bool) -> Tensor | None:
    """``dropout(relu(input), p, training)`` as one node while training with 0 < p < 1; None otherwise."""
    if not training or not 0.0 < p < 1.0 or not _fits(input):
        return None
    return release_values(ReluDropout.apply(input, keep_mask(input, p), _scale(p)), 0, 1)  # (it keeps its own mask)


def dropout_add(x: Tensor, z: Tensor, p: float, training: bool) -> Tensor | None:
    """``x + dropout(z, p, training)`` as one node keeping at most a bool mask; None where it does not apply
    (shapes or dtypes differ, not floating, p = 1)."""
    if not _fits(x, z) or x.shape != z.shape or x.dtype is not z.dtype or p >= 1.0:
        return None
    keep = keep_mask(z, p) if training and p > 0.0 else None
    if keep is None and not (STATE.enabled and (x.requires_grad or z.requires_grad)):
        return x + z  # no graph: the plain operator
    return release_values(DropoutAdd.apply(x, z, keep, _scale(p)), 0, 1)
