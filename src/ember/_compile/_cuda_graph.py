"""CUDA graphs for captured programs on torch-CUDA (PyTorch's "reduce-overhead" idea).

A program qualifies when it is a pure function of its inputs and the tensors it reads from outside: torch
backend on a CUDA device, no opaque call (an optimizer step reads its learning rate on the host at each
step, so graphing it would bake the rate in), no random draw (Ember seeds a torch generator from its own
host generator per draw), no ``.grad`` assignment, no value guard, and no write to memory from outside
(batch-norm running statistics). Evaluation forwards of compiled modules are the typical case; training
steps replay as plain programs. The graph is recorded once after the checked replay; each replay copies the
inputs into the graph's static buffers, replays it, and returns copies of its outputs. Parameters are read by
address, so a parameter given a new array (``p.data = ...``) makes that call replay the plain program.

Not exercised on this machine (no GPU); ``tests/compile/test_compile_cuda.py`` skips without CUDA.
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ._instr import _DATA, TRef
from ._program import MISS, Program
from ._tracer import Tracer

__all__ = ["graphable", "CudaGraphProgram"]

#: the device types whose torch programs are graphed (tests add "cpu" with a stand-in for ``torch.cuda``'s graphs)
DEVICE_TYPES = ("cuda",)


def graphable(tr: Tracer, leaves: list[Tensor], mode: Any) -> bool:
    """Whether a recording qualifies for a CUDA graph (see the module docstring)."""
    if mode == "max-autotune-no-cudagraphs" or (not leaves and not tr.slots):
        return False
    backends = {t._backend for t in leaves} | tr.backends
    if not backends or any(b.name != "torch" or b.device.type not in DEVICE_TYPES for b in backends):
        return False
    if tr.value_guards or any(ins.kind in "org" for ins in tr.instrs):
        return False
    outside = {tr.roots[s] for s, (kind, _) in enumerate(tr.slots) if kind in ("ext", "grad", "const")}
    return not any(ins.writes & outside for ins in tr.instrs)


class CudaGraphProgram:
    """A Program replayed through one ``torch.cuda.CUDAGraph`` (same ``run`` interface)."""

    def __init__(self, program: Program, externals: list[Tensor], leaves: list[Tensor]) -> None:
        import torch

        self.program = program
        self.source = program.source
        self.n_instrs = program.n_instrs
        self.outputs = program.outputs
        self.externals = [(p, _DATA.__get__(p)) for p in externals]
        self.static_in = [_DATA.__get__(t).clone() for t in leaves]
        self.shells = [Tensor._make(a, t._backend) for a, t in zip(self.static_in, leaves, strict=True)]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up before recording, as CUDA graphs require
            for _ in range(2):
                program.run(*self.shells)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_out = program.run(*self.shells)

    def run(self, *leaves: Tensor) -> Any:
        if any(_DATA.__get__(p) is not a for p, a in self.externals):
            return self.program.run(*leaves)  # a parameter has another array now
        for buf, t in zip(self.static_in, leaves, strict=True):
            buf.copy_(_DATA.__get__(t))
        self.graph.replay()
        return _fresh(self.static_out)


def _fresh(x: Any) -> Any:
    """The graph's outputs live in its static memory: hand out copies."""
    if x is MISS:
        return x
    if isinstance(x, Tensor):
        return Tensor._make(_DATA.__get__(x).clone(), x._backend)
    if isinstance(x, tuple | list):
        return x.__class__(_fresh(v) for v in x)
    if isinstance(x, dict):
        return {k: _fresh(v) for k, v in x.items()}
    return x


_ = TRef  # outputs are built by the program's template (TRef -> Tensor)
