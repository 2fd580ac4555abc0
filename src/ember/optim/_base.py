"""``Optimizer``: PyTorch's base class for optimizers written in Python, so that a PyTorch optimizer class runs
unchanged: ``super().__init__(params, defaults)``, a ``step`` over ``self.param_groups`` reading ``p.grad`` and
keeping tensors in ``self.state[p]``, ``zero_grad``, ``state_dict``/``load_state_dict`` in PyTorch's format
(parameters by index), ``add_param_group``, and step hooks. Ember's built-in optimizers (``OptimizerAdaptor``:
one ``SimpleOptimizer`` over arrays) derive from it too."""

from __future__ import annotations

import copy
import functools
import itertools
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from .._hooks import RemovableHandle
from .._tensor import Tensor
from .._tensor_grad import clear_grads

__all__ = ["Optimizer", "required"]

_hook_ids = itertools.count()


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


#: a default a parameter group must give itself (PyTorch's ``torch.optim.optimizer.required``)
required = _Required()


def call_with_step_hooks(
    opt: Optimizer, step: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``step(opt, *args, **kwargs)`` between ``opt``'s step hooks (a pre-hook may return new args and kwargs)."""
    opt._in_step = True
    try:
        for hook in list(opt._step_pre_hooks.values()):
            changed = hook(opt, args, kwargs)
            if changed is not None:
                args, kwargs = changed
        out = step(opt, *args, **kwargs)
        for hook in list(opt._step_post_hooks.values()):
            hook(opt, args, kwargs)
    finally:
        opt._in_step = False
    return out


def _with_hooks(step: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(step)
    def run(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        # (a subclass's step calling its parent's: the hooks run once; a wrapper class that never ran
        # ``Optimizer.__init__``, as accelerate's AcceleratedOptimizer, has no hooks of its own, as in PyTorch)
        if self._in_step or not (getattr(self, "_step_pre_hooks", None) or getattr(self, "_step_post_hooks", None)):
            return step(self, *args, **kwargs)
        return call_with_step_hooks(self, step, args, kwargs)

    run.__ember_step_hooks__ = True  # type: ignore[attr-defined]
    return run


class Optimizer:
    """Base class of optimizers: ``Optimizer(params, defaults)`` builds ``param_groups`` (each group's options
    default to ``defaults``) and an empty ``state`` keyed by parameter; subclasses define ``step``."""

    #: set False in a class body whose own ``step`` calls the step hooks itself (``OptimizerAdaptor``'s, inside the
    #: call ``ember.compile`` replays); every other class defining ``step`` has it wrapped with them
    _wrap_step = True
    _in_step = False  # (set on the instance while the hooks' step runs)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if (
            cls.__dict__.get("_wrap_step", True)
            and step is not None
            and not getattr(step, "__ember_step_hooks__", False)
        ):
            cls.step = _with_hooks(step)  # type: ignore[method-assign]

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        self.state: Any = defaultdict(dict)
        self._init_hooks()
        for group in self._groups(params):
            self.add_param_group(group)

    def _init_hooks(self) -> None:
        self._step_pre_hooks: dict[int, Callable[..., Any]] = {}
        self._step_post_hooks: dict[int, Callable[..., Any]] = {}

    def _groups(self, params: Any) -> list[dict[str, Any]]:
        """``params`` (parameters, dicts of groups, or a module) as a list of group dicts, checked."""
        if hasattr(params, "parameters") and callable(params.parameters):
            params = params.parameters()
        if isinstance(params, (Tensor, dict)) or not hasattr(params, "__iter__"):
            kind = f"a single {type(params).__name__}; wrap it in a list" if isinstance(params, Tensor) else \
                f"a {type(params).__name__}"  # fmt: skip
            raise TypeError(f"{type(self).__name__}: params must be an iterable of Tensors or of dicts "
                            f"(e.g. model.parameters() or [m.weight]), got {kind}")  # fmt: skip
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        return params if isinstance(params[0], dict) else [{"params": params}]

    def _checked_params(self, group: dict[str, Any]) -> list[Tensor]:
        ps = group["params"]
        ps = [ps] if isinstance(ps, Tensor) else list(ps)
        for p in ps:
            if not isinstance(p, Tensor):
                raise TypeError(f"{type(self).__name__}: parameters must be Tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(f"{type(self).__name__}: can only optimize leaf tensors (got one with grad_fn)")
        first: dict[int, int] = {}
        for i, p in enumerate(ps):
            if id(p) in first:
                raise ValueError(f"{type(self).__name__}: the same parameter (shape {tuple(p.shape)}) is given twice, "
                                 f"at positions {first[id(p)]} and {i}; pass each parameter once "
                                 "(model.parameters() already does)")  # fmt: skip
            first[id(p)] = i
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in ps):
            raise ValueError(f"{type(self).__name__}: a parameter appears in more than one group")
        return ps

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add parameters with their own options; options not given come from ``defaults``."""
        ps = self._checked_params(param_group)
        group = {**self.defaults, **{k: v for k, v in param_group.items() if k != "params"}, "params": ps}
        missing = [k for k, v in group.items() if v is required]
        if missing:
            raise ValueError(f"{type(self).__name__}: parameter group didn't specify a value of required "
                             f"optimization parameter {missing[0]}")  # fmt: skip
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's gradient (``set_to_none=False``: fill it with zeros)."""
        clear_grads(self.param_groups, set_to_none)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter (subclasses define it)."""
        raise NotImplementedError(f"{type(self).__name__} must define step()")

    def register_step_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` before each ``step``; it may return new ``(args, kwargs)``."""
        k = next(_hook_ids)
        self._step_pre_hooks[k] = hook
        return RemovableHandle(self._step_pre_hooks, k)

    def register_step_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` after each ``step``."""
        k = next(_hook_ids)
        self._step_post_hooks[k] = hook
        return RemovableHandle(self._step_post_hooks, k)

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's format: ``{"state": {index: {...}}, "param_groups": [{options..., "params": [index, ...]}]}``,
        parameters numbered in group order; the state's tensors are the live ones (save or copy them)."""
        index: dict[int, int] = {}
        groups = []
        for g in self.param_groups:
            ids = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": ids})
        state = {index[id(p)]: s for p, s in self.state.items() if isinstance(p, Tensor) and id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict`` gave (a copy): parameters matched by position; floating state tensors take
        their parameter's dtype and device (``step`` counters keep theirs)."""
        if not isinstance(state_dict, dict) or "param_groups" not in state_dict or "state" not in state_dict:
            raise ValueError("load_state_dict: not an optimizer state dict (it needs 'state' and 'param_groups')")
        saved = copy.deepcopy(state_dict)
        groups = saved["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError(f"load_state_dict: {len(groups)} saved param groups, the optimizer has "
                             f"{len(self.param_groups)}")  # fmt: skip
        mapping: dict[Any, Tensor] = {}
        for sg, g in zip(groups, self.param_groups, strict=True):
            if len(sg["params"]) != len(g["params"]):
                raise ValueError(f"load_state_dict: a saved group has {len(sg['params'])} params, "
                                 f"this one has {len(g['params'])}")  # fmt: skip
            mapping.update(zip(sg["params"], g["params"], strict=True))
        self.state = defaultdict(dict)
        for k, s in saved["state"].items():
            p = mapping.get(k)
            if p is None:
                continue
            self.state[p] = {
                n: (v.to(device=p.device, dtype=p.dtype) if isinstance(v, Tensor) and v.is_floating_point()
                    and n != "step" else v.to(device=p.device) if isinstance(v, Tensor) else v)
                for n, v in s.items()
            }  # fmt: skip
        for sg, g in zip(groups, self.param_groups, strict=True):
            g.update({k: v for k, v in sg.items() if k != "params"})

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_hooks()

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join(lines) + "\n)"
