"""``SimpleOptimizer`` + ``OptimizerAdaptor`` (spec: Optimization) with PyTorch's optimizer API on top.

A simple optimizer defines the state of one parameter and one step on arrays::

    class SignSGD(SimpleOptimizer):
        defaults = {"lr": 1e-2}

        def step(self, lr, param, grad, state, group):
            return param - lr * self.xp(param).sign(grad), state

    opt = OptimizerAdaptor(SignSGD(), model.parameters(), lr=0.1)

The adaptor does the rest (spec, five steps): it walks the parameters, skips those without a gradient
or frozen, moves loaded state to each parameter's device, runs the update without graph recording, and
keys the state by the parameter's stable ``id``; ``state_dict()``/``load_state_dict()`` and
``into_record()`` save it.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from .._hooks import RemovableHandle
from .._tensor import Tensor
from ..autograd._capture import opaque
from ..autograd._grad_mode import enable_grad, no_grad
from ..backends import namespace_of
from ..nn.utils import clip_arrays_by_norm_
from ..record import record_to_state, state_to_record
from ._base import Optimizer, call_with_step_hooks, required
from ._complex_params import as_complex_state, as_real, as_real_state, is_complex
from ._graph_step import step_form, zero_grad_form
from ._state import OptimizerState, _is_array
from ._state import param_key as _key

__all__ = ["Optimizer", "OptimizerAdaptor", "SimpleOptimizer", "WeightDecay", "required"]

_hook_ids = itertools.count()
_PARALLEL_MIN = 1 << 20  # elements: below this a thread pool costs more than it saves
_POOL_SIZE = min(os.cpu_count() or 1, 8)
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(_POOL_SIZE, thread_name_prefix="ember-optim")
    return _POOL


class SimpleOptimizer:
    """One parameter's state and one update step, on backend arrays (override ``init_state`` and ``step``)."""

    #: option names and defaults (PyTorch's per-group options)
    defaults: ClassVar[dict[str, Any]] = {}
    #: whether complex parameters are taken (updated as pairs of reals, PyTorch's rule); False: they are refused
    complex_params: ClassVar[bool] = True

    def init_state(self, param: Any, group: dict[str, Any]) -> dict[str, Any]:
        """The state of a parameter before its first step (arrays shaped like ``param``, counters)."""
        return {}

    def step(self, lr: float, param: Any, grad: Any, state: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        """Return ``(new_param, new_state)``; updating ``param`` in place and returning it is allowed.

        ``grad`` is read-only. State keys starting with ``_`` are scratch space: kept between steps, never saved.
        """
        raise NotImplementedError(f"{type(self).__name__} must define step()")

    #: the backend kernel ``step_many`` calls; where a backend has it, a group's parameters are updated at once
    many_kernel: ClassVar[str | None] = None

    def step_many(
        self, lr: float, params: list[Any], grads: list[Any], states: list[dict[str, Any]], group: dict[str, Any],
        backend: Any,
    ) -> None:  # fmt: skip
        """Update all of a group's parameters (all on ``backend``, which has ``many_kernel``) in place at once,
        exactly as ``step`` would one by one (a multi-tensor kernel: one launch on a GPU)."""
        raise NotImplementedError(f"{type(self).__name__} has no multi-tensor step")

    @staticmethod
    def xp(array: Any) -> Any:
        """The array namespace (NumPy's names) of the backend that made ``array``: state is created
        next to its parameter, never silently on the host."""
        return namespace_of(array)


class WeightDecay:
    """An optimizer hook adding ``penalty * param`` to each gradient before the step (L2 regularisation)."""

    def __init__(self, penalty: float) -> None:
        if penalty < 0:
            raise ValueError(f"WeightDecay: penalty must be non-negative, got {penalty}")
        self.penalty = penalty

    def __call__(self, params: list[Any], grads: list[Any]) -> None:
        for p, g in zip(params, grads, strict=True):
            g += self.penalty * p


class OptimizerAdaptor(Optimizer):
    """Runs a SimpleOptimizer over parameter groups: PyTorch's optimizer API plus Burn's ``step(lr, grads)``."""

    _wrap_step = False  # (its step calls the step hooks itself, inside the call ember.compile replays)

    def __init__(self, simple: SimpleOptimizer, params: Any, *, grad_clip_norm: float | None = None,
                 grad_clip_value: float | None = None, **options: Any) -> None:  # fmt: skip
        self.simple = simple
        unknown = set(options) - set(simple.defaults)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown options {sorted(unknown)}; "
                            f"it takes {sorted(simple.defaults)}")  # fmt: skip
        self.defaults = {**simple.defaults, **options}
        self._check(self.defaults)
        self.grad_clip_norm, self.grad_clip_value = grad_clip_norm, grad_clip_value
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[str, dict[str, Any]] = OptimizerState()
        self._hooks: dict[int, Callable[..., Any]] = {}
        self._init_hooks()
        for g in self._groups(params):
            self.add_param_group(g)

    def _check(self, opts: dict[str, Any]) -> None:
        lr = opts.get("lr")
        if lr is not None and not (isinstance(lr, (int, float)) and lr >= 0):
            raise ValueError(f"{type(self).__name__}: invalid learning rate {lr!r}")
        for k in ("eps", "weight_decay", "momentum"):
            if k in opts and isinstance(opts[k], (int, float)) and opts[k] < 0:  # (Adafactor's eps is a pair)
                raise ValueError(f"{type(self).__name__}: {k} must be non-negative, got {opts[k]}")
        if opts.get("nesterov") and (opts.get("momentum", 0) <= 0 or opts.get("dampening", 0) != 0):
            raise ValueError(f"{type(self).__name__}: Nesterov momentum requires a momentum and zero dampening")
        betas = opts.get("betas")
        if betas is not None and not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"{type(self).__name__}: betas must be in [0, 1), got {betas}")

    def add_param_group(self, group: dict[str, Any]) -> None:
        """Add parameters with their own options (PyTorch convention)."""
        ps = self._checked_params(group)
        g = {**self.defaults, **{k: v for k, v in group.items() if k != "params"}, "params": ps}
        self._check(g)
        self.param_groups.append(g)

    # -- the step (opaque to ember.compile: replayed as calls, so group values stay live; _graph_step.py: as
    # a CUDA graph replays them) ----------------------------------------------------------------------------
    zero_grad = opaque(Optimizer.zero_grad)

    def register_hook(self, hook: Callable[[list[Any], list[Any]], Any]) -> RemovableHandle:
        """``hook(params, grads)`` on the arrays about to be updated, before the per-parameter steps."""
        k = next(_hook_ids)
        self._hooks[k] = hook
        return RemovableHandle(self._hooks, k)

    @opaque
    def step(self, closure: Callable[[], Any] | None = None, *, lr: float | None = None, grads: Any = None) -> Any:
        """Update every parameter that has a gradient; ``lr``/``grads`` override the scheduled rate and ``.grad``."""
        if (self._step_pre_hooks or self._step_post_hooks) and not self._in_step:
            return self._hooked_step(closure, lr, grads)
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._step_group(group, lr, grads)
        return loss

    def _hooked_step(self, closure: Any, lr: Any, grads: Any) -> Any:
        """``step`` between the step hooks (PyTorch's ``register_step_pre_hook``/``register_step_post_hook``)."""
        args: tuple[Any, ...] = () if closure is None else (closure,)
        kwargs = {k: v for k, v in (("lr", lr), ("grads", grads)) if v is not None}
        return call_with_step_hooks(self, OptimizerAdaptor.step.__wrapped_opaque__, args, kwargs)  # type: ignore[attr-defined]

    def _grad_of(self, p: Tensor, grads: Any) -> Tensor | None:
        if grads is None:
            return p.grad
        try:
            return grads[p]  # type: ignore[no-any-return]
        except KeyError:
            return None

    def _step_group(self, group: dict[str, Any], lr: float | None, grads: Any) -> None:
        live = []
        for p in group["params"]:
            if not p.requires_grad:
                continue  # frozen
            g = self._grad_of(p, grads)
            if g is None:
                continue
            if g._data.shape != p._data.shape:  # (the arrays' shapes: no tuples made)
                raise ValueError(
                    f"{type(self).__name__}: gradient shape {tuple(g.shape)} does not match parameter {tuple(p.shape)}"
                )
            live.append((p, g))
        if not live:
            return
        # gradients are read-only for the steps; copy them only when something here modifies them
        modify = bool(group.get("maximize") or self._hooks or self.grad_clip_norm or self.grad_clip_value)
        be = live[0][0]._backend
        xp = be.xp
        # (an array of the parameter's dtype, not to be modified, as it is: torch's ``.to`` costs ~1.5 µs a call)
        garrs = [
            g._data if not modify and g._data.dtype == p._data.dtype else xp.astype(g._data, p._data.dtype, copy=modify)
            for p, g in live
        ]
        if group.get("maximize"):
            for ga in garrs:
                ga *= -1
        parrs = [p._data for p, _ in live]
        for hook in list(self._hooks.values()):
            hook(parrs, garrs)
        self._clip(garrs, be)
        rate = group["lr"] if lr is None else lr
        cplx = [i for i, a in enumerate(parrs) if is_complex(be, a)]  # updated as pairs of reals (PyTorch's rule)
        if cplx and not self.simple.complex_params:
            raise RuntimeError(f"{type(self).__name__} does not support complex parameters")
        for i in cplx:
            parrs[i], garrs[i] = as_real(be, parrs[i]), as_real(be, garrs[i])

        def state_of(i: int) -> dict[str, Any]:
            p = live[i][0]
            st = self.state.get(_key(p))
            if st is None:
                st = self.simple.init_state(parrs[i], group)
            elif st.get("_backend") is not p._backend:  # loaded, or the param moved: bring the state along
                st = _to_backend(st, p)
            st["_backend"] = p._backend
            return as_real_state(be, st) if i in cplx else st

        def keep(i: int, st: dict[str, Any]) -> None:
            p = live[i][0]
            p._vc[0] += 1
            self.state[_key(p)] = as_complex_state(be, st, tuple(parrs[i].shape)) if i in cplx else st

        def one(i: int) -> None:
            pa = parrs[i]
            new_p, new_st = self.simple.step(rate, pa, garrs[i], state_of(i), group)
            if new_p is not pa:
                pa[...] = new_p
            keep(i, new_st)

        many = self.simple.many_kernel
        if many and hasattr(be, many) and len(live) > 1 and all(p._backend is be for p, _ in live):
            states = [state_of(i) for i in range(len(live))]  # one multi-tensor update
            self.simple.step_many(rate, parrs, garrs, states, group, be)
            for i, st in enumerate(states):
                keep(i, st)
            return
        # parameters are independent: large steps run on all cores (NumPy releases the GIL in its kernels), unless
        # the backend's steps use the cores themselves (``threaded_steps``); on an accelerator the kernels are
        # queued asynchronously and host threads would only contend
        size = sum(p.numel() for p, _ in live)
        pool = _POOL_SIZE > 1 and be.device.type == "cpu" and not getattr(be, "threaded_steps", False)
        if len(live) > 1 and size >= _PARALLEL_MIN and pool:
            order = sorted(range(len(live)), key=lambda i: -live[i][0].numel())
            list(_pool().map(one, order))
        else:
            for i in range(len(live)):
                one(i)

    def _clip(self, garrs: list[Any], backend: Any) -> None:
        if self.grad_clip_value is not None:
            for ga in garrs:
                ga[...] = backend.xp.clip(ga, -self.grad_clip_value, self.grad_clip_value)
        if self.grad_clip_norm is not None:
            clip_arrays_by_norm_(garrs, backend, self.grad_clip_norm)

    # -- state ----------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {param_id: {...}}, "param_groups": [{options..., "params": [param_id, ...]}]}``."""
        backends = {_key(p): p._backend for g in self.param_groups for p in g["params"]}
        state = {
            k: {
                n: (Tensor._make(backends[k].xp.copy(v), backends[k]) if _is_array(v) else v)
                for n, v in s.items()
                if n[:1] != "_"
            }
            for k, s in self.state.items()
            if k in backends
        }
        groups = [{**{k: v for k, v in g.items() if k != "params"}, "params": [_key(p) for p in g["params"]]}
                  for g in self.param_groups]  # fmt: skip
        return {"optimizer": type(self).__name__, "state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore state saved by ``state_dict``; params are matched by id, else by position (PyTorch)."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"load_state_dict: expected the dict from optimizer.state_dict(), got "
                            f"{type(state_dict).__name__}")  # fmt: skip
        if "param_groups" not in state_dict or "state" not in state_dict:
            raise ValueError(f"load_state_dict: not an optimizer state dict (it needs 'state' and 'param_groups'; "
                             f"it has keys {sorted(map(str, state_dict))}); pass what optimizer.state_dict() "
                             "returned, not a model's state_dict")  # fmt: skip
        kind = state_dict.get("optimizer", type(self).__name__)
        if kind != type(self).__name__:
            raise ValueError(
                f"load_state_dict: the state was saved from {kind}, this optimizer is {type(self).__name__}"
            )
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError(f"load_state_dict: {len(groups)} saved param groups, the optimizer has "
                             f"{len(self.param_groups)}")  # fmt: skip
        mapping = {}
        for sg, g in zip(groups, self.param_groups, strict=True):
            if len(sg["params"]) != len(g["params"]):
                raise ValueError(f"load_state_dict: a saved group has {len(sg['params'])} params, "
                                 f"this one has {len(g['params'])}")  # fmt: skip
            for saved, p in zip(sg["params"], g["params"], strict=True):
                mapping[str(saved)] = p
            for k, v in sg.items():
                if k != "params":
                    g[k] = tuple(v) if k in ("betas", "eps", "etas", "step_sizes") and isinstance(v, list) else v
        self.state = OptimizerState()
        for k, s in state_dict["state"].items():
            p = mapping.get(str(k))
            if p is None:
                continue
            for n, v in s.items():
                if isinstance(v, Tensor) and v.shape != () and not _fits(v.shape, p.shape):
                    raise ValueError(f"load_state_dict: state {n!r} of param {k} has shape {tuple(v.shape)}, "
                                     f"but the parameter has shape {tuple(p.shape)}")  # fmt: skip
            self.state[_key(p)] = {n: (p._backend.xp.copy(v.to(p.device)._data) if isinstance(v, Tensor) else v)
                                   for n, v in s.items()}  # fmt: skip
            self.state[_key(p)]["_backend"] = p._backend

    def into_record(self) -> Any:
        return state_to_record(self.state_dict(), "optimizer")

    def load_record(self, record: Any) -> None:
        self.load_state_dict(record_to_state(record))


# how a CUDA graph replays the two opaque calls (ember.compile on torch-CUDA; _graph_step.py)
setattr(OptimizerAdaptor.step.__wrapped_opaque__, "__graph_form__", step_form)  # type: ignore[attr-defined]  # noqa: B010
setattr(OptimizerAdaptor.zero_grad.__wrapped_opaque__, "__graph_form__", zero_grad_form)  # type: ignore[attr-defined]  # noqa: B010


def _to_backend(state: dict[str, Any], p: Tensor) -> dict[str, Any]:
    """State made for another device or backend moves to the parameter's (the spec's adaptor, step 3)."""
    src = state.get("_backend")
    dst = p._backend
    out = {}
    for k, v in state.items():
        if _is_array(v) and src is not None and src is not dst:
            v = src.transfer(v, dst)
        elif _is_array(v) and not isinstance(v, dst.array_type):
            v = dst.asarray(v)
        out[k] = v
    return out


def _fits(state: tuple[int, ...], param: tuple[int, ...]) -> bool:
    """A state of the parameter's shape, or of it with some dims 1 (Adafactor's factored row and column)."""
    return len(state) == len(param) and all(a in (b, 1) for a, b in zip(state, param, strict=True))
