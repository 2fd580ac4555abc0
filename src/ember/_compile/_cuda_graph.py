"""CUDA graphs for captured programs on torch-CUDA (PyTorch's "reduce-overhead" idea).

A program qualifies when a graph replaying its kernels with every host value baked in does what the program
does: torch backend on a CUDA device, no random draw (Ember seeds a torch generator from its own host generator
per draw), no value guard, no recorded write into a gradient or a constant from outside (a tensor's memory from
outside may be written: batch norm's running statistics, updated in place by the graph), no input whose
``.grad`` the program reads or sets (the graph runs on static copies of the inputs), and every opaque call
one that has a *graph form* (``__graph_form__`` on the function: the optimizer's ``step`` and ``zero_grad``,
``optim/_graph_step.py``). A graph form runs the
call's device work inside the capture with its live values (learning rate, Adam's step count) read from device
tensors, writes them before each replay, says whether what it baked in still holds (else that call replays the
plain program, which calls the optimizer live), and does the call's host bookkeeping after each replay. So
evaluation forwards and whole training steps (forward, backward, a fused SGD/Adam update, ``zero_grad``) qualify.

The graph is recorded once after the checked replay: two warm-up runs and the capture, after each of which the
state the runs changed (parameters, buffers, optimizer state and step counts, version counters, gradients) is
put back, so the call's result stays eager's. A gradient the program reads from before the call (accumulation:
a step without ``zero_grad``, the op chain's leaf) is an input like the others: the graph reads a static copy
of it. Each replay copies the inputs and those gradients into the graph's static buffers,
writes the forms' live values, replays, redoes the host effects in program order (``.grad`` assignments, the
forms' bookkeeping; a gradient left holding the graph's memory gets a copy, which the next replay would
overwrite), and returns copies of its outputs. Parameters and optimizer state are read by address: a parameter
given a new array makes that call replay the plain program.

Not exercised on a GPU: ``tests/compile/test_compile_cuda.py`` skips without CUDA; ``test_compile_cuda_standin.py``
runs this file on torch-CPU through a stand-in for ``torch.cuda``'s graphs.
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ._instr import _DATA, _GRAD, GRAPH_RUN, TRef, _Opaque
from ._program import MISS, Program
from ._sites import where
from ._tracer import Tracer

__all__ = ["graph_plan", "refusal", "CudaGraphProgram"]

#: the device types whose torch programs are graphed (tests add "cpu" with a stand-in for ``torch.cuda``'s graphs)
DEVICE_TYPES = ("cuda",)


def _form_maker(ins: Any) -> Any:
    return getattr(ins.fn.fn, "__graph_form__", None) if isinstance(ins.fn, _Opaque) and not ins.fn.n else None


_FORMS = "only SGD/Adam/AdamW steps with a fused multi-tensor kernel and no closure, and zero_grad(set_to_none=True)"


def refusal(tr: Tracer, leaves: list[Tensor], mode: Any) -> str | None:
    """Why a recording does not qualify for a CUDA graph (see the module docstring), None when it does; ""
    when graphs are not in question (not a torch-CUDA program, or turned off by ``mode``)."""
    if mode == "max-autotune-no-cudagraphs" or (not leaves and not tr.slots):
        return ""
    backends = {t._backend for t in leaves} | tr.backends
    if not backends or any(b.name != "torch" or b.device.type not in DEVICE_TYPES for b in backends):
        return ""
    if tr.value_guards:
        return f"a value read on the host inside Ember at {where(tr.value_guards[0][5])}"
    for ins in tr.instrs:
        if ins.kind == "r":
            return f"a random draw ({getattr(ins.fn, '__name__', 'random')}): its seed would be baked in"
        if ins.kind == "o" and _form_maker(ins) is None:
            return f"{ins.fn.__name__} has no graph form ({_FORMS})"
    outside = {tr.roots[s] for s, (kind, _) in enumerate(tr.slots) if kind in ("grad", "const")}
    if any(ins.writes & outside for ins in tr.instrs):
        return "a write into a gradient or a constant from before the call"
    return None


Plan = tuple[list[Tensor], list[Any], list[Tensor], list[Tensor], list[int]]


def graph_plan(tr: Tracer, leaves: list[Tensor], mode: Any) -> Plan | str:
    """What a graph of a recording needs: the externals, a graph form per opaque call in program order, the
    leaves whose gradient from before the call the program reads, and those whose ``.grad`` it sets. When it
    does not qualify, why (``refusal``'s words; "" when graphs are not in question). Last, the positions of the
    inputs the program writes in place: the graph writes their static copies, copied back after each replay."""
    why = refusal(tr, leaves, mode)
    if why is not None:
        return why
    forms = []
    for ins in tr.instrs:
        if ins.kind == "o":
            if any(isinstance(a, TRef) for a in (*ins.args, *ins.kwargs.values())):
                return f"{ins.fn.__name__} is given a tensor the step made"
            form = _form_maker(ins)(ins.args, ins.kwargs)
            if form is None:
                return f"{ins.fn.__name__} as called here has no graph form ({_FORMS})"
            forms.append(form)
    reads = list({id(leaf): leaf for k, leaf in tr.slots if k == "grad"}.values())
    sets = list({id(ins.args[0]): ins.args[0] for ins in tr.instrs if ins.kind == "g"}.values())
    if {id(t) for t in leaves} & {id(t) for t in reads + sets}:
        return "the step reads or sets an input's .grad (the graph runs on static copies of the inputs)"
    written = set().union(*(ins.writes for ins in tr.instrs))
    ins_roots = [tr.roots[s] for s, (k, _) in enumerate(tr.slots) if k == "in"]
    outside_roots = [tr.roots[s] for s, (k, _) in enumerate(tr.slots) if k not in ("in", "out")]
    for r in written.intersection(ins_roots):
        if ins_roots.count(r) + outside_roots.count(r) > 1:  # two static copies of one memory would part ways
            return "an input written in place shares its memory with another input or a tensor from outside"
    writes_in = [k for k, r in enumerate(ins_roots) if r in written]
    return [p for k, p in tr.slots if k == "ext"], forms, reads, sets, writes_in


class _Run:
    """Receives a program's opaque calls and ``.grad`` assignments while it runs for the graph (``GRAPH_RUN``)."""

    def __init__(self, forms: list[Any], effects: list[Any] | None) -> None:
        self.forms, self.effects, self.i = forms, effects, 0

    def on_opaque(self, op: _Opaque) -> tuple[()]:
        form = self.forms[self.i]
        self.i += 1
        form.launch()
        if self.effects is not None:
            self.effects.append(form)
        return ()

    def on_set_grad(self, leaf: Tensor, a: Any, backend: Any) -> None:
        if self.effects is not None:
            self.effects.append((leaf, a, backend))


class _State:
    """The state runs for a graph change, taken before them and put back after each (in place: the graph keeps
    the addresses)."""

    def __init__(self, tensors: list[Tensor], forms: list[Any], grad_leaves: list[Tensor]) -> None:
        opts = list({id(f.opt): f.opt for f in forms}.values())
        params = [p for o in opts for g in o.param_groups for p in g["params"]]
        self.data = [(a, a.clone()) for a in {id(a): a for a in (_DATA.__get__(t) for t in tensors + params)}.values()]
        self.grads = [(p, _GRAD.__get__(p)) for p in {id(p): p for p in params + grad_leaves}.values()]
        self.grad_data = [(g._data, g._data.clone()) for _, g in self.grads if g is not None]
        self.vcs = [(p, p._vc[0]) for p in params]
        self.states = [(st, dict(st), {k: v.clone() for k, v in st.items() if hasattr(v, "data_ptr")})
                       for o in opts for st in o.state.values()]  # fmt: skip

    def restore(self) -> None:
        for a, c in self.data + self.grad_data:
            a.copy_(c)
        for p, g in self.grads:
            _GRAD.__set__(p, g)
        for p, v in self.vcs:
            p._vc[0] = v
        for st, kv, arrays in self.states:
            st.clear()
            st.update(kv)
            for k, c in arrays.items():
                st[k].copy_(c)


class CudaGraphProgram:
    """A Program replayed through one ``torch.cuda.CUDAGraph`` (same ``run`` interface)."""

    def __init__(self, program: Program, plan: Plan, leaves: list[Tensor]) -> None:
        import torch

        externals, self.forms, grad_leaves, grad_sets, self.writes_in = plan
        self.program = program
        self.source = program.source
        self.n_instrs = program.n_instrs
        self.outputs = program.outputs
        self.externals = [(p, _DATA.__get__(p)) for p in externals]
        self.static_in = [_DATA.__get__(t).clone() for t in leaves]
        self.shells = [Tensor._make(a, t._backend) for a, t in zip(self.static_in, leaves, strict=True)]
        # gradients read from before the call: the runs below read static copies (their .grad, for the while)
        held = [(leaf, _GRAD.__get__(leaf)) for leaf in grad_leaves]
        self.static_grads = [(leaf, g._data.clone()) for leaf, g in held]
        for (leaf, g), (_, buf) in zip(held, self.static_grads, strict=True):
            _GRAD.__set__(leaf, Tensor._make(buf, g._backend))
        # runs set .grad: put back after each (those read: onto their static copies, which each run starts from)
        state = _State(externals, self.forms, grad_sets + grad_leaves)
        self.effects: list[Any] = []
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        try:
            with torch.cuda.stream(side):  # warm-up before recording, as CUDA graphs require
                for _ in range(2):
                    GRAPH_RUN[0] = _Run(self.forms, None)
                    program.run(*self.shells)
                    state.restore()
            torch.cuda.current_stream().wait_stream(side)
            for f in self.forms:
                f.before()
            self.graph = torch.cuda.CUDAGraph()
            GRAPH_RUN[0] = _Run(self.forms, self.effects)
            with torch.cuda.graph(self.graph):
                self.static_out = program.run(*self.shells)
        finally:
            GRAPH_RUN[0] = None
            state.restore()
            for leaf, g in held:
                _GRAD.__set__(leaf, g)
        self.static = {id(e[1]) for e in self.effects if isinstance(e, tuple) and e[1] is not None}

    def run(self, *leaves: Tensor) -> Any:
        if any(_DATA.__get__(p) is not a for p, a in self.externals) or not all(f.check() for f in self.forms):
            return self.program.run(*leaves)  # a parameter has another array now, or a baked value changed
        for buf, t in zip(self.static_in, leaves, strict=True):
            buf.copy_(_DATA.__get__(t))
        for leaf, buf in self.static_grads:  # (the guards saw a gradient of this layout)
            buf.copy_(_GRAD.__get__(leaf)._data)
        for f in self.forms:
            f.before()
        self.graph.replay()
        for k in self.writes_in:  # an input the program writes in place: the caller's tensor gets what it wrote
            _DATA.__get__(leaves[k]).copy_(self.static_in[k])
        touched = []
        for e in self.effects:  # the host effects, in program order
            if isinstance(e, tuple):
                leaf, a, backend = e
                _GRAD.__set__(leaf, None if a is None else Tensor._make(a, backend))
                touched.append(leaf)
            else:
                e.after()
        for leaf in touched:  # a gradient left holding the graph's memory: a copy (the next replay overwrites it)
            g = _GRAD.__get__(leaf)
            if g is not None and id(g._data) in self.static:
                _GRAD.__set__(leaf, Tensor._make(g._data.clone(), g._backend))
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
