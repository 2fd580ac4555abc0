"""``torch._dynamo.eval_frame``'s ``OptimizedModule``: the type ``ember.compile(module)`` returns (libraries ask
``isinstance(m, torch._dynamo.eval_frame.OptimizedModule)`` and unwrap ``m._orig_mod``)."""

from __future__ import annotations

from .._compile._module import OptimizedModule

__all__ = ["OptimizedModule"]
