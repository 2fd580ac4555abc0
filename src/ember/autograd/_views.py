"""Views and in-place writes: the graph stays right when tensors share storage (PyTorch's rules).

A view (reshape, transpose, basic slicing ...) shares its base's storage and version counter, and keeps
``_view = (base, replay, version)``: the root base tensor, a function making the same view of any array
of the base's shape, and the version at which the view's history was last in step with the base's.

- A write through a view rebases the base's history: the base's new node (``CopySlices``) routes the
  gradient outside the view to the base's old history and the part inside it to the written value.
- A view whose storage was written since its history was set (through the base or another view) gets a
  fresh history on the base's current one (``AsView``) the next time the graph uses it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ._function import Op, record_node
from ._grad_mode import STATE

__all__ = ["make_view", "rebase_through_view"]

Replay = Callable[[Any], Any]


def make_view(out: Tensor, x: Tensor, replay: Replay) -> None:
    """Mark ``out`` as a view of ``x``, made from an array of ``x``'s shape by ``replay``."""
    out._vc = x._vc
    xv = x._view
    if xv is None:
        out._view = (x, replay, x._vc[0])
    else:
        parent = xv[1]
        out._view = (xv[0], lambda a: replay(parent(a)), x._vc[0])


def _root(base: Tensor) -> Tensor:
    """A view's root base. ``make_view`` points at the root, but a root may later become a view of its old self
    (``t_``, ``squeeze_`` ... in place: ``ops/_inplace_view.py``); views taken before replay on that old self."""
    return base if base._view is None else base._view[0]


def _refresh_view(t: Tensor) -> None:
    """Give view ``t`` a history on its base's current one when its storage was written since."""
    base, replay, version = t._view
    if t._vc[0] == version or not STATE.enabled:
        return
    base = _root(base)
    t._view = (base, replay, t._vc[0])
    if base._requires_grad:
        node = AsView.__new__(AsView)
        node.backend = base._backend
        node.replay, node.shape, node.dtype = replay, base._data.shape, base._data.dtype
        record_node(node, (base,), t)
        if t._retain or t._hooks:
            node._ref_output(t)
    else:
        t._creator, t._requires_grad = None, False


def rebase_through_view(t: Tensor, r: Tensor) -> None:
    """After ``r``'s value was written into view ``t``: the base's new history, then ``t``'s."""
    base, replay, _ = t._view
    base = _root(base)
    old = Tensor._make(base._data, base._backend)  # the base's previous version (no values are saved)
    old._requires_grad, old._creator, old._out_idx = base._requires_grad, base._creator, base._out_idx
    node = CopySlices.__new__(CopySlices)
    node.backend = base._backend
    node.replay = replay
    keep_hooks_on_old_version(base)
    record_node(node, (old, r), base)
    move_retained(base)
    keep_hooks_on_old_version(t)
    t._view = (base, replay, -1)
    _refresh_view(t)


def keep_hooks_on_old_version(t: Tensor) -> None:
    """Before ``t`` gets a new history: hooks registered so far stay with its old version."""
    c = t._creator
    if c is not None and c._out_refs:
        ref = c._out_refs.get(t._out_idx)
        if ref is not None and ref() is t:
            stub = Tensor._make(t._data, t._backend)
            stub._hooks = t._hooks
            c._out_refs[t._out_idx] = lambda: stub
    t._hooks = None


def move_retained(t: Tensor) -> None:
    """``retain_grad`` follows the tensor to its new version (as in PyTorch)."""
    if t._retain and t._creator is not None:
        t._creator._ref_output(t)


class _Replay(Op):
    """``replay(g)``: the view's part of a gradient of the base's shape."""

    saves_inputs = False

    def forward(self, g: Any, replay: Replay, shape: tuple[int, ...]) -> Any:
        self.replay, self.shape, self.dtype = replay, shape, g.dtype
        return replay(g)

    def backward(self, gg: Tensor) -> tuple[Tensor, None, None, None]:
        return _Scatter.apply(gg, self.replay, self.shape, self.dtype), None, None, None


class _Scatter(Op):
    """Zeros of the base's shape and dtype with ``g`` written into the view's region (the gradient of a view;
    the base's dtype: a view may read it as another, as ``real``/``imag`` of a complex base do)."""

    saves_inputs = False

    def forward(self, g: Any, replay: Replay, shape: tuple[int, ...], dtype: Any) -> Any:
        self.replay, self.shape = replay, shape
        z = self.backend.xp.zeros(shape, dtype=dtype)
        replay(z)[...] = g
        return z

    def backward(self, gg: Tensor) -> tuple[Tensor, None, None, None]:
        return _Replay.apply(gg, self.replay, self.shape), None, None, None


class _ZeroRegion(Op):
    """A copy of ``g`` with the view's region set to zero."""

    saves_inputs = False

    def forward(self, g: Any, replay: Replay) -> Any:
        self.replay = replay
        z = self.backend.xp.array(g, copy=True)
        replay(z)[...] = 0
        return z

    def backward(self, gg: Tensor) -> tuple[Tensor, None]:
        return _ZeroRegion.apply(gg, self.replay), None


class AsView(Op):
    """A view's history regenerated on its base's current one (after a write into shared storage)."""

    saves_inputs = False
    bf16_native = True
    replay: Replay
    shape: tuple[int, ...]
    dtype: Any

    def backward(self, g: Tensor) -> Tensor:
        return _Scatter.apply(g, self.replay, self.shape, self.dtype)

    def backward_arrays(self, g: Any) -> Any:
        z = self.backend.xp.zeros(self.shape, dtype=self.dtype)
        self.replay(z)[...] = g
        return z


class CopySlices(Op):
    """The base after a write through one of its views: ``(base's old value, written value)`` inputs."""

    saves_inputs = False
    replay: Replay

    def backward(self, g: Tensor) -> tuple[Tensor, Tensor]:
        return _ZeroRegion.apply(g, self.replay), _Replay.apply(g, self.replay, g.shape)

    def backward_arrays(self, g: Any) -> tuple[Any, Any]:
        z = self.backend.xp.array(g, copy=True)
        self.replay(z)[...] = 0
        return z, self.replay(g)
