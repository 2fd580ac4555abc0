"""``ember.compile(module)``: a Module that replays its captured forward.

As in PyTorch the wrapper holds the original as ``_orig_mod`` (so its ``state_dict`` keys start with
``_orig_mod.``) and forwards every other attribute to it. Under ``no_grad`` (or when nothing needs a gradient)
the forward is a captured program; under grad mode it is one graph node whose backward is the recorded
backward program (``_graphnode.py``).
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..autograd._capture import CAPTURE
from ..autograd._grad_mode import STATE
from ..nn.module import Module
from ._api import CompiledFunction
from ._graphnode import GraphForward

__all__ = ["OptimizedModule"]


class OptimizedModule(Module):
    """The result of ``ember.compile(module)``: calls replay the module's captured forward."""

    def __init__(self, mod: Module, **kw: Any) -> None:
        super().__init__()
        self._orig_mod = mod

        def forward(*args: Any, **kwargs: Any) -> Any:
            return mod(*args, **kwargs)

        forward.__qualname__ = f"{type(mod).__name__}.forward"
        object.__setattr__(self, "_compiled", CompiledFunction(forward, **kw))
        object.__setattr__(self, "_graph", GraphForward(mod, bool(kw.get("fullgraph"))))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if STATE.enabled and _needs_grad(self._orig_mod, args, kwargs):
            if kwargs or CAPTURE.tracer is not None or self._compiled.backend == "eager":
                return self._orig_mod(*args, **kwargs)
            return self._graph(*args)
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)

    def __repr__(self) -> str:
        return f"OptimizedModule({self._orig_mod!r})"


def _needs_grad(mod: Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    if any(p.requires_grad for p in mod.parameters()):
        return True
    return any(isinstance(a, Tensor) and a.requires_grad for a in (*args, *kwargs.values()))
