"""A compiled forward (a module's, or a function returning a graph) under grad mode: one graph node whose
backward is a recorded program.

Capture runs the forward eagerly, then ``autograd.grad`` of its outputs (with seed gradients that are inputs
of the recording) with respect to every input that needs a gradient and every leaf tensor the forward read from
outside that does (its parameters); the recording splits in
two programs at that point. The forward program returns the outputs and the arrays the backward reads; a
replay wraps them in one node (``CompiledForward``), whose ``backward_arrays`` runs the backward program on
the incoming gradients. What the backward part reads on the host, random draws in it and opaque calls anywhere
make the module run eagerly under grad mode (its no-grad calls are still captured).
"""

from __future__ import annotations

import warnings
from typing import Any

from .._tensor import Tensor
from ..autograd._function import Op
from ._guards import World, flatten, modules_of
from ._hooks import install, uninstall
from ._instr import _DATA, Ref, tensors_in
from ._program import MISS, NotHoistableError, Program, build
from ._registry import LIVE, ProgramCache
from ._tracer import Tracer, where
from ._verify import Snapshot, _bits_equal, _close, _copy, atomics_may_differ, deterministic_kernels

__all__ = ["GraphForward", "CompiledForward"]


class CompiledForward(Op):
    """One node for a compiled forward: its inputs are the tensors needing a gradient, its outputs the
    module's; ``backward_arrays`` replays the recorded backward program."""

    saves_inputs = False

    def forward(self, *arrays: Any, outs: tuple[Any, ...], saved: tuple[Any, ...], bwd: Program) -> Any:
        self.saved, self.bwd, self.shapes = saved, bwd, [(o.shape, o.dtype) for o in outs]
        return outs if len(outs) > 1 else outs[0]

    def backward_arrays(self, *grads: Any) -> Any:
        xp = self.backend.xp
        seeds = [xp.zeros(s, dtype=d) if g is None else g for g, (s, d) in zip(grads, self.shapes, strict=True)]
        res = self.bwd.run(*self.saved, *seeds)
        self.saved = ()
        return res

    def backward(self, *grads: Any) -> Any:
        raise RuntimeError(
            "ember.compile: a compiled module's forward has no differentiable backward (create_graph=True, "
            "double backward); call the original module (compiled._orig_mod) for that"
        )


class _Entry:
    __slots__ = ("bwd", "fwd", "key", "params", "template", "verified", "watch", "world")

    def __init__(self, key: Any, world: World, fwd: Program, bwd: Program, params: list[Tensor], template: Any,
                 watch: dict[str, Any]) -> None:  # fmt: skip
        self.key, self.world, self.fwd, self.bwd, self.params, self.template = key, world, fwd, bwd, params, template
        self.watch, self.verified = watch, False


class GraphForward(ProgramCache):
    """The grad-mode calls of one compiled forward (a cache of split programs, as ``CompiledFunction``)."""

    def __init__(self, fn: Any, fullgraph: bool, cache_size: int | None = None) -> None:
        self.mod, self.fullgraph = fn, fullgraph
        self._cache_size = cache_size  # None: the process's setting (``_dynamo.config.cache_size_limit``), live
        self.cache: list[_Entry] = []
        self.eager = False
        self.reason: str | None = None
        self.stats = {"captures": 0, "checked": 0, "replays": 0, "eager": 0}
        LIVE.add(self)

    def reset(self) -> None:
        """Forget the captured programs (``ember.compiler.reset``)."""
        self.cache.clear()
        self.eager, self.reason = False, None

    def __call__(self, *args: Any) -> Any:
        if self.eager:
            self.stats["eager"] += 1
            return self.mod(*args)
        leaves, key = flatten(args, {}, frozenset())
        for e in self.cache:
            if e.key == key and e.world.check(leaves) is None:
                if not e.verified:
                    return self._checked(e, args, leaves)
                res = e.fwd.run(*leaves)
                if res is MISS:
                    break
                outs, saved = res
                targets = [t for t in leaves if t.requires_grad] + e.params
                y = CompiledForward.apply(*targets, outs=outs, saved=saved, bwd=e.bwd)
                ys = y if isinstance(y, tuple) else (y,)
                self.stats["replays"] += 1
                return _fill(e.template, list(ys))
        if len(self.cache) >= self.cache_size:
            self.stats["eager"] += 1
            return self.mod(*args)
        return self._capture(args, leaves, key)

    def _name(self) -> str:
        m = self.mod
        return type(m).__name__ if hasattr(m, "parameters") else getattr(m, "__qualname__", type(m).__name__)

    def _capture(self, args: tuple[Any, ...], leaves: list[Tensor], key: Any) -> Any:
        from ..autograd import grad

        tr = Tracer(self.fullgraph)
        world = World(modules_of(self.mod, args))
        inputs: list[int] = []
        install(tr)
        try:
            for k, t in enumerate(leaves):
                a = _DATA.__get__(t)
                tr.input_ids[id(t)] = k
                ta = tr.input(a)
                _DATA.__set__(t, ta)
                tr.restore.append((t, a))
                inputs.append(ta._s if ta is not a else tr.tknown[id(a)])
            result = self.mod(*args)
            outs = tensors_in(result)
            split = len(tr.instrs)
            params = [p for k, p in tr.slots if k == "ext" and p.requires_grad and p._creator is None]
            targets = [t for t in leaves if t.requires_grad] + params
            # (through DDP: a backward here would average gradients across ranks, and the replayed node's would not)
            usable = (
                not tr.off and not tr.touched and outs and all(o.requires_grad and o.is_floating_point() for o in outs)
            )
            if usable:
                tr.suspended += 1
                seeds_arr = [o._backend.xp.zeros(o.shape, dtype=_DATA.__get__(o).dtype) for o in outs]
                tr.suspended -= 1
                seeds = [Tensor._make(tr.input(a), o._backend) for a, o in zip(seeds_arr, outs, strict=True)]
                seed_slots = [tr.adopt_tensor(s) for s in seeds]
                tr.late_inputs = set(seed_slots)
                out_slots = [tr.adopt_tensor(o) for o in outs]
                gs = grad(outs, targets, grad_outputs=seeds, retain_graph=True, allow_unused=True)
                grad_slots = [None if g is None else Ref(tr.adopt_tensor(g)) for g in gs]
        finally:
            uninstall(tr)
        self.stats["captures"] += 1
        why = tr.problem[0] if tr.problem else None
        if why is None and tr.touched:
            why = (
                "it is a forward through DistributedDataParallel, whose backward averages gradients (not captured "
                "yet: compile the whole training step)"
            )
        if why is None and not usable:
            why = "its outputs are not floating-point tensors that need a gradient"
        if why is None and any(ins.kind in "og" for ins in tr.instrs):
            why = "it calls an optimizer or sets gradients"
        if why is None:
            try:
                saved = _saved_slots(tr, split, set(seed_slots))
                fwd = build(tr, (tuple(Ref(s) for s in out_slots), tuple(Ref(s) for s in saved)), inputs,
                            span=range(split))  # fmt: skip
                bwd = build(tr, tuple(grad_slots), [], span=range(split, len(tr.instrs)), arrays=saved + seed_slots)
            except NotHoistableError as e:
                why = f"a value read inside Ember{' at ' + where(e.site) if e.site else ''}"
        if why is not None:
            self.eager, self.reason = True, why
            warnings.warn(f"ember.compile: {self._name()}'s forward under grad mode runs eagerly: {why}",
                          UserWarning, stacklevel=4)  # fmt: skip
            return result
        world.finish(tr, leaves)
        self.cache.append(_Entry(key, world, fwd, bwd, params, _template(result), Snapshot.of(tr, leaves)))
        return result

    def _checked(self, e: _Entry, args: tuple[Any, ...], leaves: list[Tensor]) -> Any:
        """An entry's first replay, run beside eager: the forward program's outputs and state changes, then the
        backward program's gradients (for seed gradients equal to the outputs) must equal eager's bit for bit.
        The call returns eager's result; a difference makes the forward run eagerly from now on."""
        from ..autograd import grad

        self.stats["checked"] += 1
        targets = [t for t in leaves if t.requires_grad] + e.params
        snap = Snapshot(e.watch, leaves)
        close = atomics_may_differ(snap.arrays())  # a GPU's atomics: eager differs from eager in the last bits
        with deterministic_kernels(close):
            res = e.fwd.run(*leaves)
            if res is MISS:
                return self.mod(*args)
            after_replay = snap.take()
            snap.restore()
            result = self.mod(*args)
        diff = snap.differences(after_replay, snap.take(), close)
        outs, saved = res
        eager_outs = tensors_in(result)
        if diff is None and not (len(outs) == len(eager_outs) and all(
                _same(a, _DATA.__get__(t), close) for a, t in zip(outs, eager_outs, strict=True))):  # fmt: skip
            diff = "the forward's result"
        if diff is None:
            seeds = [_copy(_DATA.__get__(o)) for o in eager_outs]
            replayed = e.bwd.run(*saved, *seeds)
            seed_t = [Tensor._make(a, o._backend) for a, o in zip(seeds, eager_outs, strict=True)]
            eager_g = grad(eager_outs, targets, grad_outputs=seed_t, retain_graph=True, allow_unused=True)
            for r, g in zip(replayed, eager_g, strict=True):
                if (r is None) != (g is None) or not (r is None or _same(r, _DATA.__get__(g), close)):
                    diff = "the backward's gradients"
                    break
        if diff is not None:
            self.eager, self.reason = True, f"its replay differed from eager ({diff})"
            warnings.warn(f"ember.compile: {self._name()}'s forward under grad mode runs eagerly: its replay differed "
                          f"from eager ({diff}); please report this", UserWarning, stacklevel=4)  # fmt: skip
        e.verified = True
        return result


def _same(a: Any, b: Any, close: bool) -> bool:
    """Two arrays bit for bit (``close``: within the rounding of reordered sums, as ``_verify`` allows)."""
    return _bits_equal(a, b) or (close and _close(a, b))


def _saved_slots(tr: Tracer, split: int, seeds: set[int]) -> list[int]:
    """The slots the backward part reads that the forward part made (or that are inputs)."""
    made_later = {r.s for ins in tr.instrs[split:] for r in _refs(ins.outs)}
    out: dict[int, None] = {}
    for ins in tr.instrs[split:]:
        for s in ins.reads:
            kind = tr.slots[s][0]
            if s not in made_later and s not in seeds and kind in ("in", "out"):
                out[s] = None
    return list(out)


def _refs(t: Any) -> list[Ref]:
    if isinstance(t, Ref):
        return [t]
    if isinstance(t, tuple | list):
        return [r for v in t for r in _refs(v)]
    return []


def _template(result: Any) -> Any:
    if isinstance(result, Tensor):
        return None
    if isinstance(result, tuple | list):
        return result.__class__(_template(v) for v in result)
    return ("value", result)


def _fill(template: Any, ys: list[Tensor]) -> Any:
    if template is None:
        return ys.pop(0)
    if isinstance(template, tuple | list) and not (len(template) == 2 and template[0] == "value"):
        return template.__class__(_fill(v, ys) for v in template)
    return template[1]
