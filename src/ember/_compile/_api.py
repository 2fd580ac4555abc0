"""``ember.compile``: capture a function (a whole training step, or a forward) once, replay it as a program.

A call first looks for a program whose guards hold (``_guards.py``). None: the function runs eagerly while
it is recorded (``_tracer.py``), and the recording becomes a program (``_program.py``). The next call that
matches it replays it once beside eager and compares the two bit for bit (``_verify.py``); from then on the
program runs alone. What cannot be captured makes the function eager, with one warning naming the file and
line (``fullgraph=True``: an error instead). At most ``cache_size`` programs are kept per function; past that
a call that matches none runs eagerly, with one warning naming the argument that keeps changing.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..autograd._capture import CAPTURE
from ..autograd._grad_mode import STATE
from ._cuda_graph import CudaGraphProgram, graph_plan
from ._graphnode import GraphForward
from ._guards import World, describe_change, flatten, modules_of
from ._hooks import install, uninstall
from ._instr import _DATA, _GRAD, Ref, TRef, tensors_in
from ._program import MISS, NotHoistableError, Program, build
from ._registry import LIVE, ProgramCache
from ._tracer import CaptureError, Tracer, where
from ._verify import Snapshot, atomics_may_differ, deterministic_kernels, same_outputs

__all__ = ["compile", "CompiledFunction", "CaptureError"]

_KNOWN_MODES = {None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"}
_KNOWN_BACKENDS = {None, "ember", "eager", "inductor", "cudagraphs", "aot_eager"}
_NOTED: set[str] = set()


def _note_once(msg: str) -> None:
    if msg not in _NOTED:
        _NOTED.add(msg)
        warnings.warn(msg, UserWarning, stacklevel=3)


class _Entry:
    """One program with its guards (``key``: the arguments'; ``world``: the rest)."""

    __slots__ = ("graph", "key", "program", "verified", "watch", "world")

    def __init__(self, key: Any, world: World, program: Program, watch: dict[str, Any]) -> None:
        self.key, self.world, self.program, self.watch = key, world, program, watch
        self.verified = False
        self.graph: Any = None  # ``_cuda_graph.graph_plan``'s, when the program may become a CUDA graph


class CompiledFunction(ProgramCache):
    """A function (or a module's call) that replays its captured programs; made by :func:`ember.compile`."""

    def __init__(self, fn: Callable[..., Any], *, fullgraph: bool = False, dynamic: Any = None, mode: Any = None,
                 backend: Any = None, static_argnums: Any = (), static_argnames: Any = (),
                 cache_size: int | None = None) -> None:  # fmt: skip
        self.fn = fn
        self.fullgraph = fullgraph
        self.mode, self.backend, self.dynamic = mode, backend, dynamic
        nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        self.static = frozenset(nums) | frozenset(names)
        self._cache_size = cache_size  # None: the process's setting (``_dynamo.config.cache_size_limit``), live
        self.cache: list[_Entry] = []
        self.eager = backend == "eager"
        self.reason: str | None = None  # why it runs eagerly, when it does
        self.graph_skips: list[str] = []  # why a torch-CUDA program replays without a CUDA graph
        self.stats = {
            "captures": 0,
            "replays": 0,
            "eager": 0,
            "capture_s": 0.0,
            "verify_s": 0.0,
            "verified_within_rounding": 0,
        }
        self._full_warned = False
        self.graph: Any = None  # GraphForward, once a call returned a tensor attached to a graph
        self._last_key: Any = None
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]
        LIVE.add(self)

    def reset(self) -> None:
        """Forget the captured programs (``ember.compiler.reset``): the next call captures again."""
        self.cache.clear()
        self.eager, self.reason = self.backend == "eager", None
        self.graph, self._last_key, self._full_warned = None, None, False

    def __get__(self, obj: Any, objtype: Any = None) -> Any:  # decorating a method
        return self if obj is None else functools.partial(self, obj)

    # -- a call ------------------------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.eager or CAPTURE.tracer is not None:  # eager, or inside another capture: part of it
            self.stats["eager"] += 1
            return self.fn(*args, **kwargs)
        if self.graph is not None and STATE.enabled and not kwargs:  # a forward whose result needs a graph
            return self.graph(*args)
        leaves, key = flatten(args, kwargs, self.static)
        miss = None
        for entry in self.cache:
            if entry.key != key:
                continue
            why = entry.world.check(leaves)
            if why is not None:
                miss = why
                continue
            if not entry.verified:
                return self._verify(entry, args, kwargs, leaves)
            out = entry.program.run(*leaves)
            if out is not MISS:
                self.stats["replays"] += 1
                return out
            miss = "a value read inside Ember (a check or a branch)"
        if len(self.cache) >= self.cache_size:
            if not self._full_warned:
                self._full_warned = True
                what = miss or describe_change(self.fn, self._last_key, key) if self._last_key else miss
                warnings.warn(
                    f"ember.compile: {self._name()} was captured {len(self.cache)} times and its inputs keep "
                    f"changing ({what}); calls that match no captured program now run eagerly. Mark Python "
                    "arguments that take few values with static_argnums, or keep shapes fixed",
                    UserWarning,
                    stacklevel=2,
                )
            self.stats["eager"] += 1
            return self.fn(*args, **kwargs)
        self._last_key = key
        return self._capture(args, kwargs, leaves, key)

    def _name(self) -> str:
        return getattr(self.fn, "__qualname__", None) or type(self.fn).__name__

    # -- capture -------------------------------------------------------------------------------------------
    def _capture(self, args: tuple[Any, ...], kwargs: dict[str, Any], leaves: list[Tensor], key: Any) -> Any:
        t0 = time.perf_counter()
        tr = Tracer(self.fullgraph)
        world = World(modules_of(self.fn, args))
        inputs: list[int] = []
        tr.static_ids = {id(t) for t in _static_tensors(args, kwargs, self.static)}
        tr.entry_states = {id(o): (o, o._capture_state()) for o in list(CAPTURE.stateful)}
        install(tr)
        try:
            for k, t in enumerate(leaves):
                a = _DATA.__get__(t)
                if id(t) in tr.input_ids or not (_is_numpy(a) or isinstance(a, tr.array_types)):
                    tr.flag("the same tensor is passed twice" if id(t) in tr.input_ids else
                            f"tensors of the {t._backend.name} backend are not captured yet")  # fmt: skip
                    break
                tr.input_ids[id(t)] = k
                ta = tr.input(a)
                _DATA.__set__(t, ta)
                tr.restore.append((t, a))
                inputs.append(ta._s if ta is not a else tr.tknown[id(a)])
            result = self.fn(*args, **kwargs)
            template = None if tr.off else self._outputs(tr, result)
        finally:
            uninstall(tr)
        _untrace(result, tr)
        self.stats["captures"] += 1
        self.stats["capture_s"] += time.perf_counter() - t0
        if tr.problem is not None:
            return self._give_up(tr.problem[0], tr.problem[1], result)
        if template is None and self.graph is not None and (tr.collectives or tr.touched):
            self.graph = None  # (a graph node's backward would not make DDP's host steps)
            return self._give_up("it is a forward through DistributedDataParallel whose backward runs outside it (not "
                                 "captured yet: compile the whole training step)", None, result)  # fmt: skip
        if template is None and self.graph is not None:
            return result  # the next calls under grad mode go to the graph node
        try:
            program = build(tr, template, inputs, buffers=True)
        except NotHoistableError as e:
            return self._give_up("a value read inside Ember depends on what the step changed before it", e.site,
                                 result)  # fmt: skip
        world.finish(tr, leaves)
        entry = _Entry(key, world, program, Snapshot.of(tr, leaves) if not tr.collectives else {})
        # distributed collectives in it: never replayed beside eager to check it (that would make each collective
        # twice, and another rank capturing or running eagerly at that call makes them once: the ranks' calls
        # would stop matching); tests/distributed/test_compile_ddp.py checks such replays against eager
        entry.verified = tr.collectives > 0
        plan = graph_plan(tr, leaves, self.mode)
        if isinstance(plan, str):
            self._no_graph(plan)
        else:
            entry.graph = plan
        self.cache.append(entry)
        return result

    def _outputs(self, tr: Tracer, result: Any) -> Any:
        """The output template: tensors become ``TRef``s of their slots (graph-attached ones cannot be)."""
        if isinstance(result, Tensor):
            if result.requires_grad and result._creator is not None and result._creator.inputs is not None:
                self.graph = GraphForward(self.fn, self.fullgraph)  # a forward: one graph node from now on
                tr.off = True
                return None
            return TRef(tr.adopt_tensor(result), result._backend)
        if isinstance(result, tuple | list):
            return result.__class__(self._outputs(tr, v) for v in result)
        if isinstance(result, dict):
            return {k: self._outputs(tr, v) for k, v in result.items()}
        return result

    def _give_up(self, what: str, site: Any, result: Any) -> Any:
        at = f" at {where(site)}" if site else ""
        self.eager = True
        self.reason = f"{what}{at}"
        self.cache.clear()
        warnings.warn(f"ember.compile: {self._name()} runs eagerly: {what}{at}", UserWarning, stacklevel=4)
        return result

    # -- the first replay, checked ---------------------------------------------------------------------------
    def _verify(self, entry: _Entry, args: tuple[Any, ...], kwargs: dict[str, Any], leaves: list[Tensor]) -> Any:
        t0 = time.perf_counter()
        snap = Snapshot(entry.watch, leaves)
        close = atomics_may_differ(snap.arrays())  # a GPU's atomics: eager differs from eager in the last bits
        with deterministic_kernels(close):
            replayed = entry.program.run(*leaves)
            if replayed is MISS:
                return self.fn(*args, **kwargs)
            after_replay = snap.take()
            snap.restore()
            entry.world.restore_states()
            result = self.fn(*args, **kwargs)
        diff = snap.differences(after_replay, snap.take(), close)
        if diff is None and not same_outputs(replayed, result, close=close):
            diff = "the function's result"
        self.stats["verify_s"] += time.perf_counter() - t0
        self.stats["verified_within_rounding"] += snap.inexact
        if diff is not None:
            return self._give_up(f"its replay differed from eager ({diff}); please report this", None, result)
        entry.verified = True
        entry.watch = {}
        _release_scratch()
        if entry.graph is not None:
            try:
                entry.program = CudaGraphProgram(entry.program, entry.graph, leaves)  # type: ignore[assignment]
            except Exception as e:
                self._no_graph(f"{type(e).__name__}: {e}", always=True)
            entry.graph = None
        return result

    def _no_graph(self, why: str, always: bool = False) -> None:
        """Keep why a torch-CUDA program replays without a CUDA graph (``graph_skips``, as PyTorch counts its
        cudagraph skips); a note once when graphs were asked for (``mode="reduce-overhead"``) or capture failed."""
        if why and why not in self.graph_skips:
            self.graph_skips.append(why)
            if always or self.mode == "reduce-overhead":
                _note_once(f"ember.compile: no CUDA graph for {self._name()}: {why}")

    def __repr__(self) -> str:
        state = f"eager: {self.reason}" if self.eager else f"{len(self.cache)} programs"
        return f"<ember.compile of {self._name()} ({state})>"


def _release_scratch() -> None:
    """Empty the backends' scratch pools that the checked replay's eager run filled: replays make their own
    arrays, so the pooled ones would only add to the process's memory (eager code refills the pools)."""
    from ..backends import _CACHE

    for be in list(_CACHE.values()):
        ws = be.__dict__.get("_ws")
        if ws is not None:
            ws.clear()


def _static_tensors(args: tuple[Any, ...], kwargs: dict[str, Any], static: frozenset[Any]) -> list[Tensor]:
    picked = [a for i, a in enumerate(args) if i in static] + [v for k, v in kwargs.items() if k in static]
    return tensors_in(picked)


def _is_numpy(a: Any) -> bool:
    import numpy as np

    return isinstance(a, np.ndarray)


def _untrace(result: Any, tr: Tracer) -> None:
    """Plain arrays again in what outlives the capture: the result's tensors and the gradients set."""
    import numpy as np

    from ._ndarray import TracedArray

    def fix(t: Any) -> None:
        if t is not None:
            a = _DATA.__get__(t)
            if a.__class__ is TracedArray:
                _DATA.__set__(t, np.ndarray.view(a, np.ndarray))

    for t in tensors_in(result):
        fix(t)
    for leaf, _, _ in tr.grad_state.values():
        fix(_GRAD.__get__(leaf))
    for ins in tr.instrs:
        if ins.kind == "g":
            fix(_GRAD.__get__(ins.args[0]))


#: torch.compile's other keywords (2.13: a name for its caches and logs, a recompile limit, shape specs): accepted,
#: they tune Dynamo, which Ember's capture does not have
_TORCH_SETTINGS = frozenset({"isolate_recompiles", "name", "recompile_limit", "shapes_spec"})


def compile(
    model: Any = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: Any = None,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
    static_argnums: Any = (),
    static_argnames: Any = (),
    **settings: Any,
) -> Any:
    """Capture ``model`` (a function, e.g. a whole training step, or a Module) and replay it as one program.

    PyTorch's signature: ``mode`` and ``backend`` values Ember does not have are accepted with a one-time
    note (``backend="eager"`` runs eagerly); ``fullgraph=True`` raises where eager fallback would warn.
    ``static_argnums``/``static_argnames`` mark arguments (tensors included) whose *values* the function
    may read: the program is recaptured when they change. Usable as ``@ember.compile`` and
    ``@ember.compile(fullgraph=True)``.
    """
    unknown = sorted(set(settings) - _TORCH_SETTINGS)
    if unknown:
        raise TypeError(f"compile() got an unexpected keyword argument {unknown[0]!r}")
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable, static_argnums=static_argnums,
                                 static_argnames=static_argnames, **settings)  # fmt: skip
    if disable:
        return model
    if mode not in _KNOWN_MODES:
        _note_once(f"ember.compile: mode={mode!r} is not one of Ember's; using the default")
    if not (backend in _KNOWN_BACKENDS or callable(backend)):
        _note_once(f"ember.compile: backend={backend!r} is not available in Ember; using Ember's capture")
    if backend not in (None, "ember", "eager"):
        _note_once(f"ember.compile: backend={backend!r} is PyTorch's; Ember replays its own captured program")
    from ..nn.module import Module

    kw = dict(fullgraph=fullgraph, dynamic=dynamic, mode=mode, backend=backend)
    if isinstance(model, Module):
        from ._module import OptimizedModule

        return OptimizedModule(model, **kw)
    if not callable(model):
        raise TypeError(f"ember.compile: expected a function or a Module, got {type(model).__name__}")
    return CompiledFunction(model, static_argnums=static_argnums, static_argnames=static_argnames, **kw)


# Ref is part of the program templates' vocabulary; re-exported for the module wrapper.
_ = Ref
