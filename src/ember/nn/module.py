"""``Module``: the base of every layer and model (spec: Module; PyTorch's ``nn.Module`` API).

A module can hold anything. Attribute assignment registers what is state: ``Param``s (parameters and
buffers) and sub-modules (including ``ModuleList``/``ModuleDict``); every other field — constants,
handles, callables, references to modules it does not own (wrap them in ``Ref``) — is kept as a plain
attribute and never saved.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .._dtype import as_dtype
from .._hooks import RemovableHandle
from .._param import Param
from .._tensor import Tensor, _is_device
from ..autograd._grad_mode import no_grad
from ..record import Record, load, save
from ..record._load import IncompatibleKeys
from ._module_dicts import ModuleDicts
from ._module_extras import ModuleExtras
from ._module_hooks import (
    GLOBAL_FWD,
    GLOBAL_PRE,
    _add_hook,
    _BackwardHookIn,
    _BackwardHookOut,
    entry,
    forward_with_hooks,
    run_pre_hooks,
)
from ._module_slots import STRUCTURE, Slots
from ._module_state import ModuleState

__all__ = ["Module", "Ref", "IncompatibleKeys"]


class Ref:
    """A reference to a module that is not owned: not registered, not saved, not moved by ``to()``."""

    __slots__ = ("module",)

    def __init__(self, module: Module) -> None:
        self.module = module

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def __deepcopy__(self, memo: dict[int, Any]) -> Ref:
        return Ref(self.module)  # not owned: a copy of the owner refers to the same module


def _null_buffers(m: Module) -> set[str]:
    """The names registered as buffers that hold None now (made on first use: most modules have none)."""
    d = m.__dict__
    if "_null_buffers" not in d:
        object.__setattr__(m, "_null_buffers", set())
    return d["_null_buffers"]  # type: ignore[no-any-return]


class Module(ModuleExtras, ModuleDicts, ModuleState):
    """Base class of layers and models.

    Subclasses assign parameters and sub-modules as attributes in ``__init__`` and usually define
    ``forward``; ``module(x)`` runs the forward pre-hooks, ``forward`` and the forward hooks.
    """

    _params: dict[str, Param | None]
    _modules: dict[str, Module | None]
    _non_persistent: set[str]
    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "_params", Slots())
        object.__setattr__(self, "_modules", Slots())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_pre_hooks", Slots())
        object.__setattr__(self, "_fwd_hooks", Slots())
        object.__setattr__(self, "_bwd_hooks", Slots())
        object.__setattr__(self, "training", True)

    # -- registration ------------------------------------------------------------------------------
    def _ensure_init(self) -> None:
        if "_params" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() before assigning attributes")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        if isinstance(value, Param):
            self._ensure_init()
            self._modules.pop(name, None)
            d.pop(name, None)
            self._params[name] = value
            if value.is_buffer and value.persistent is not None:  # an ``nn.Buffer(..., persistent=)``
                (self._non_persistent.discard if value.persistent else self._non_persistent.add)(name)
        elif isinstance(value, Module):
            self._ensure_init()
            self._params.pop(name, None)
            d.pop(name, None)
            self._modules[name] = value
        elif "_params" in d and name in self._params:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} to parameter {name!r} (a Param or None)")
            old = self._params[name]
            nulls = d.get("_null_buffers", ())
            buf = old.is_buffer if old is not None else name in nulls
            if isinstance(value, Tensor):
                pid = old.id if old is not None else None
                self._params[name] = Param(value.detach() if buf else value, id=pid, is_buffer=buf)
                if buf and name in nulls:
                    nulls.discard(name)  # type: ignore[attr-defined]
            else:
                self._params[name] = None
                if buf:
                    _null_buffers(self).add(name)
        elif "_modules" in d and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} to sub-module {name!r} (a Module or None)")
            self._modules[name] = None
        else:
            if name == "training":
                STRUCTURE[0] += 1  # (ember.compile's module guard)
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        if "_params" in d:
            if name in d["_params"]:
                return d["_params"][name]
            if name in d["_modules"]:
                return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        STRUCTURE[0] += 1
        if name in self._params:
            del self._params[name]
            self._non_persistent.discard(name)
            self.__dict__.get("_null_buffers", set()).discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._params) | set(self._modules))

    def register_parameter(self, name: str, param: Param | None) -> None:
        """Register ``param`` (or a ``None`` slot) under ``name``."""
        self._check_name(name)
        if param is not None and not isinstance(param, Param):
            raise TypeError(f"register_parameter: {name!r} must be a Param or None, got {type(param).__name__}")
        self._params[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Register state that is not trained (running statistics); ``persistent=False`` keeps it out of saves."""
        self._check_name(name)
        if tensor is None:
            self._params[name] = None
            _null_buffers(self).add(name)  # a tensor assigned to it later is a buffer (PyTorch)
        else:
            if not isinstance(tensor, Tensor):
                raise TypeError(f"register_buffer: {name!r} must be a Tensor or None, got {type(tensor).__name__}")
            self._params[name] = Param(tensor.detach(), requires_grad=False, is_buffer=True)
        if not persistent:
            self._non_persistent.add(name)

    def register_module(self, name: str, module: Module | None) -> None:
        """Register a sub-module under ``name`` (PyTorch's ``add_module``)."""
        self._check_name(name)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"register_module: {name!r} must be a Module or None, got {type(module).__name__}")
        self._modules[name] = module

    add_module = register_module

    def _check_name(self, name: str) -> None:
        self._ensure_init()
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"invalid attribute name {name!r}: a non-empty string without '.'")
        if name in self.__dict__:
            raise KeyError(f"attribute {name!r} already exists on {type(self).__name__}")

    # -- calling -----------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        forward = getattr(type(self), "forward", None)
        if forward is None:
            raise NotImplementedError(
                f"{type(self).__name__} defines no forward(); call its methods directly or define forward"
            )
        if self._pre_hooks or GLOBAL_PRE:
            args, kwargs = run_pre_hooks(self, [*GLOBAL_PRE.values(), *self._pre_hooks.values()], args, kwargs)
        if self._bwd_hooks:
            return self._call_with_backward_hooks(forward, args, kwargs)
        if self._fwd_hooks or GLOBAL_FWD:
            return forward_with_hooks(self, forward, args, kwargs)
        return forward(self, *args, **kwargs)

    def _call_with_backward_hooks(self, forward: Callable[..., Any], args: tuple[Any, ...], kw: Any) -> Any:
        state: dict[str, Any] = {}
        pos = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        if pos:
            wrapped: Any = _BackwardHookIn.apply(self, state, *[args[i] for i in pos])
            wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
            args = tuple(wrapped[pos.index(i)] if i in pos else a for i, a in enumerate(args))
        state["n_in"] = len(pos)
        out = forward_with_hooks(self, forward, args, kw)
        outs = out if isinstance(out, tuple) else (out,)
        tpos = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
        if not tpos:
            return out
        w: Any = _BackwardHookOut.apply(self, state, *[outs[i] for i in tpos])
        w = w if isinstance(w, tuple) else (w,)
        new = tuple(w[tpos.index(i)] if i in tpos else o for i, o in enumerate(outs))
        return new if isinstance(out, tuple) else new[0]

    def register_forward_pre_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """``hook(module, args)`` before forward (``with_kwargs``: ``hook(module, args, kwargs)``); it may return
        new args (``(args, kwargs)``). ``prepend``: run before the hooks already registered."""
        return _add_hook(self._pre_hooks, entry(hook, with_kwargs), prepend)

    def register_forward_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False, always_call: bool = False
    ) -> RemovableHandle:
        """``hook(module, args, output)`` after forward (``with_kwargs``: ``hook(module, args, kwargs, output)``); it
        may return a new output. ``always_call``: also when forward raised. ``prepend``: run before the others."""
        return _add_hook(self._fwd_hooks, entry(hook, with_kwargs, always_call), prepend)

    def register_full_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` when the gradients of the module's inputs are known."""
        return _add_hook(self._bwd_hooks, hook)

    register_backward_hook = register_full_backward_hook

    # -- traversal ---------------------------------------------------------------------------------
    def named_modules(
        self, memo: set[int] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        memo = set() if memo is None else memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named_state(
        self, prefix: str, recurse: bool, buffers: bool, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Param]]:
        seen: set[int] = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mname, m in mods:
            for name, p in m._params.items():
                if p is None or p.is_buffer != buffers or (remove_duplicate and id(p) in seen):
                    continue
                seen.add(id(p))
                yield (f"{mname}.{name}" if mname else name), p

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Param]]:
        """(dotted name, parameter) for every trainable parameter (buffers excluded)."""
        return self._named_state(prefix, recurse, False, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Param]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Param]]:
        return self._named_state(prefix, recurse, True, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Param]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def num_params(self, trainable_only: bool = False) -> int:
        """The number of scalar parameters (buffers excluded)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)

    def get_submodule(self, target: str) -> Module:
        m: Module = self
        for part in target.split(".") if target else []:
            sub = m._modules.get(part)
            if sub is None:
                raise AttributeError(f"{type(m).__name__} has no sub-module {part!r} (looking up {target!r})")
            m = sub
        return m

    def get_parameter(self, target: str) -> Param:
        mod, _, name = target.rpartition(".")
        p = self.get_submodule(mod)._params.get(name)
        if p is None:
            raise AttributeError(f"no parameter or buffer {target!r}")
        return p

    def map(self, fn: Callable[[str, Param], Tensor]) -> Module:
        """Replace every parameter and buffer by ``fn(name, param)`` (spec: ``map``); ids are kept.

        ``fn`` returns a tensor; it becomes the new value of the parameter (same ``Param`` object,
        so optimizers and hooks keep working). Returns the module.
        """
        with no_grad():
            for name, p in list(self._named_state("", True, False)) + list(self._named_state("", True, True)):
                new = fn(name, p)
                if not isinstance(new, Tensor):
                    raise TypeError(f"map: fn returned {type(new).__name__} for {name!r}, expected a Tensor")
                if new is not p:
                    p._data, p._backend = new._data, new._backend
                    p._vc[0] += 1
        return self

    def visit(self, fn: Callable[[str, Param], Any]) -> None:
        """Call ``fn(name, param)`` for every parameter and buffer, read-only (spec: ``visit``)."""
        for name, p in list(self._named_state("", True, False)) + list(self._named_state("", True, True)):
            fn(name, p)

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every sub-module (children first) and on this module."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # -- modes and conversion ----------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        STRUCTURE[0] += 1
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Freeze (False) or unfreeze every parameter of this module."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad = p.grad.detach() * 0

    def to(self, *args: Any, dtype: Any = None, device: Any = None, non_blocking: bool = False,
           memory_format: Any = None) -> Module:  # fmt: skip
        """Move/convert every parameter and buffer in place (floating dtypes only change floats).

        ``device`` is a device string or object, another tensor's ``.device`` (its backend too), or a
        Backend; the optimizer's state follows each parameter at its next step.
        """
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif _is_device(a) or (isinstance(a, int) and not isinstance(a, bool)):
                device = f"cuda:{a}" if isinstance(a, int) else a
            else:
                dtype = a
        d = as_dtype(dtype) if dtype is not None else None
        if d is not None and not d.is_floating_point:
            raise TypeError(f"Module.to only converts floating-point parameters and buffers; got dtype={d} (use "
                            "float16, bfloat16, float32 or float64)")  # fmt: skip

        def convert(name: str, p: Param) -> Tensor:
            t: Tensor = p
            if device is not None:
                t = t.to(device=device, non_blocking=non_blocking)
            if d is not None and t.dtype.is_floating_point and d.is_floating_point:
                t = t.to(d)
            if p.grad is not None and t is not p:  # the raw slot: ``p`` takes t's device and dtype just after
                p._grad = p.grad.to(t.device, dtype=t.dtype)
            return t

        return self.map(convert)

    def share_memory(self) -> Module:
        """Move every parameter and buffer (and gradient) into shared memory, for Hogwild training.

        Processes started afterwards (``fork``) or given the module (``spawn`` arguments, queues) update
        the same memory; see ``ember.multiprocessing``. CPU modules only: a CUDA parameter raises.
        """
        for _, p in list(self._named_state("", True, False)) + list(self._named_state("", True, True)):
            p.share_memory_()
            if p.grad is not None:
                p.grad.share_memory_()
        return self

    def float(self) -> Module:
        return self.to("float32")

    def double(self) -> Module:
        return self.to("float64")

    def half(self) -> Module:
        return self.to("float16")

    def bfloat16(self) -> Module:
        """Floating parameters and buffers to bfloat16 (torch and NumPy backends; CuPy raises, naming torch)."""
        return self.to("bfloat16")

    def cpu(self) -> Module:
        return self.to(device="cpu")

    def cuda(self, device: Any = None) -> Module:
        if device is None:
            device = "cuda"
        elif isinstance(device, int) and not isinstance(device, bool):
            device = f"cuda:{device}"
        return self.to(device=device)

    # -- state dict --------------------------------------------------------------------------------
    def _persistent_state(self) -> Iterator[tuple[str, Param]]:
        for mname, m in self.named_modules():
            for name, p in m._params.items():
                if p is not None and name not in m._non_persistent:
                    yield (f"{mname}.{name}" if mname else name), p

    # -- records -----------------------------------------------------------------------------------
    def into_record(self) -> Any:
        """This module's parameters and buffers as a Record (tensors by reference, with their ids)."""
        return Record.from_module(self)

    def load_record(self, record: Any, strict: bool = True, assign: bool = False) -> IncompatibleKeys:
        """Load a Record (any precision, any device) into this module; ids are restored.

        Values are copied into the existing parameters; ``assign=True`` lets the parameters adopt a
        file-loaded record's arrays instead (no copy).
        """
        return record.load_into(self, strict, assign=assign)  # type: ignore[no-any-return]

    def save(self, path: Any, precision: str = "full", recorder: Any = None) -> Any:
        """Save the parameters with ``ember.record.save`` (format from the extension)."""
        return save(self, path, precision, recorder)

    def load(self, path: Any, strict: bool = True, device: Any = None) -> IncompatibleKeys:
        """Load parameters saved with ``save``."""
        return load(path, device=device).load_into(self, strict, source=str(path))

    # -- printing ----------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        head = f"{type(self).__name__}(" + (f"{extra}" if extra else "")
        return head + "\n" + "\n".join(lines) + "\n)"
