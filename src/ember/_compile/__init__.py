"""``ember.compile``: capture a training step (or a forward) once and replay it as one flat program.

See ``docs/architecture.md`` (Compile) for how it works and what it guarantees.
"""

from __future__ import annotations

from ._api import CaptureError, CompiledFunction, compile
from ._module import OptimizedModule

__all__ = ["compile", "CompiledFunction", "OptimizedModule", "CaptureError"]
