"""An optimizer's ``step`` and ``zero_grad`` as a CUDA graph replays them (``ember.compile`` on torch-CUDA).

A graph replays the kernels it captured with every host value baked in. A captured training step replays as
eager runs it when what changes between steps lives in device memory, written before each replay: the learning
rate (torch's fused kernels' ``Tensor lr`` overloads) and Adam's step count. The group's other options, the
parameters, their state arrays and the gradient clipping threshold are compared with the captured ones before
each replay; any change replays the plain program instead, which calls the step live. A step's host bookkeeping
(version counters, Adam's step count in the state) is done after each replay.

The fused kernels read a tensor learning rate as float32 on CUDA (``*lr_ptr``, widened to double), where eager
passes the double: the two agree only for a rate that is a float32 value. A group whose rate is one at capture
keeps it live in a tensor; any other rate (0.01) is baked into the graph as eager passes it, and the graph replays
only while the group's rate is still that value (a constant rate), else the plain program runs (bit-identical to
eager is the bar). ``_compile/_cuda_graph.py`` drives these forms; a form is made from
the recorded call's arguments (``make``), and runs the step inside the graph's warm-up and capture (``launch``).
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["step_form", "zero_grad_form"]

_MANY = ("sgd_step_many", "adam_step_many")


def _f32(x: float) -> bool:
    """Whether ``x`` is a float32 value (what a float32 learning-rate tensor holds exactly)."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0] == x  # type: ignore[no-any-return]
    except (OverflowError, struct.error):
        return False


class StepForm:
    """``optimizer.step()`` (no closure, no overrides) of a fused multi-tensor optimizer on one torch backend."""

    def __init__(self, opt: Any) -> None:
        self.opt = opt
        self.live: list[list[Any]] | None = None  # per group, the parameters with a gradient (at the first launch)
        self.lr: list[Any] = []  # per group: a float32 device tensor (live rate) or the float baked into the graph
        self.steps: dict[int, Any] = {}  # Adam: per group (by id) the step count tensor
        self.baked: Any = None

    def _options(self) -> Any:
        o = self.opt
        groups = tuple((tuple(sorted((k, repr(v)) for k, v in g.items() if k not in ("params", "lr"))),
                        tuple(id(p) for p in g["params"])) for g in o.param_groups)  # fmt: skip
        return groups, o.grad_clip_norm, o.grad_clip_value, len(o._hooks), type(o.simple)

    def _layout(self) -> list[Any]:
        """The identity of each live parameter's state and of the state arrays the captured kernels use."""
        from .optimizer import _key

        states = [self.opt.state.get(_key(p)) for ps in self.live or () for p in ps]
        arrays = [(k, id(v)) for st in states if st for k, v in st.items() if hasattr(v, "data_ptr")]
        return [id(st) for st in states] + arrays

    def _states(self) -> list[dict[str, Any]]:
        from .optimizer import _key

        return [self.opt.state[_key(p)] for ps in self.live or () for p in ps]

    def launch(self) -> None:
        import torch

        from ..autograd._grad_mode import no_grad

        o = self.opt
        if self.live is None:
            self._first(torch)
        adam = o.simple.many_kernel == "adam_step_many"
        with no_grad():
            try:
                if adam:
                    o.simple.device_steps = self.steps
                for g, lr in zip(o.param_groups, self.lr, strict=True):
                    o._step_group(g, lr, None)
            finally:
                if adam:
                    o.simple.device_steps = None

    def _first(self, torch: Any) -> None:
        from .optimizer import _key

        o = self.opt
        self.live = [[p for p in g["params"] if p.requires_grad and p.grad is not None] for g in o.param_groups]
        ps = [p for ps in self.live for p in ps]
        bes = {p._backend for p in ps}
        be: Any = next(iter(bes), None)
        if be is None or len(bes) != 1 or be.name != "torch" or not hasattr(be, o.simple.many_kernel):
            raise NotGraphableError("its parameters are not all on one torch backend")
        if any(len(ps) < 2 for ps in self.live if ps) or any(_key(p) not in o.state for p in ps):
            raise NotGraphableError("a group updates one parameter, or a parameter has no state yet (first step)")
        for g, gps in zip(o.param_groups, self.live, strict=True):
            if g.get("momentum") and any(o.state[_key(p)].get("momentum_buffer") is None for p in gps):
                raise NotGraphableError("a momentum buffer is made at this step")
        dev = ps[0]._data.device
        self.lr = [torch.full((), float(g["lr"]), dtype=torch.float32, device=dev) if _f32(g["lr"]) else g["lr"]
                   for g in o.param_groups]  # fmt: skip
        if o.simple.many_kernel == "adam_step_many":
            self.steps = {id(g): torch.zeros((), dtype=torch.float32, device=dev) for g in o.param_groups}
        self.baked = (self._options(), self._layout())
        self.before()

    def check(self) -> bool:
        """Whether the next replay may use the graph (nothing baked into it changed)."""
        o = self.opt
        if (self._options(), self._layout()) != self.baked:
            return False
        for g, lr in zip(o.param_groups, self.lr, strict=True):
            if not (_f32(g["lr"]) if hasattr(lr, "fill_") else g["lr"] == lr):
                return False
        from .optimizer import _key

        return all(len({o.state[_key(p)].get("step") for p in ps}) <= 1 for ps in self.live or ())

    def before(self) -> None:
        """Write the live values into the graph's device memory."""
        from .optimizer import _key

        for g, lr, ps in zip(self.opt.param_groups, self.lr, self.live or (), strict=True):
            if hasattr(lr, "fill_"):
                lr.fill_(float(g["lr"]))
            t = self.steps.get(id(g))
            if t is not None and ps:
                t.fill_(float(self.opt.state[_key(ps[0])]["step"] + 1))

    def after(self) -> None:
        """The host bookkeeping of a replayed step."""
        adam = bool(self.steps)
        for st in self._states():
            if adam:
                st["step"] += 1
        for ps in self.live or ():
            for p in ps:
                p._vc[0] += 1


class ZeroGradForm:
    """``optimizer.zero_grad()`` setting gradients to None: host work only, repeated after each replay."""

    def __init__(self, opt: Any) -> None:
        self.opt = opt

    def launch(self) -> None:
        self.opt.zero_grad()

    def check(self) -> bool:
        return True

    def before(self) -> None:
        pass

    def after(self) -> None:
        self.launch()


class NotGraphableError(RuntimeError):
    pass


def step_form(args: tuple[Any, ...], kwargs: dict[str, Any]) -> StepForm | None:
    """The graph form of a recorded ``step`` call, or None when it has none (a closure, overrides, another
    optimizer)."""
    if len(args) != 1 or kwargs or getattr(args[0].simple, "many_kernel", None) not in _MANY:
        return None
    return StepForm(args[0])


def zero_grad_form(args: tuple[Any, ...], kwargs: dict[str, Any]) -> ZeroGradForm | None:
    """The graph form of a recorded ``zero_grad`` call setting gradients to None, else None."""
    set_to_none = kwargs.get("set_to_none", args[1] if len(args) > 1 else True)
    return ZeroGradForm(args[0]) if set_to_none and len(args) <= 2 and set(kwargs) <= {"set_to_none"} else None
