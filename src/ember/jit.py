"""``ember.jit`` (PyTorch's ``torch.jit``): model code that scripts or traces itself runs on Ember, eagerly.

Ember has no TorchScript. ``script`` and ``trace`` return what they are given (``trace`` runs it once on the
example inputs, as PyTorch does); ``is_scripting()``/``is_tracing()`` are False, so code guarded by them takes
its eager branch; the decorators (``ignore``, ``unused``, ``export``, ``interface``) leave functions as they
are. To capture and replay a step, use :func:`ember.compile`. ``save``/``load`` refuse: a TorchScript archive
holds TorchScript code, which Ember cannot write or run; save a model with ``ember.save(model.state_dict())``.
"""

from __future__ import annotations

import contextlib
import typing
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from .nn.module import Module

__all__ = [
    "Final", "Future", "ScriptFunction", "ScriptModule", "annotate", "enable_onednn_fusion", "export", "fork",
    "freeze", "ignore", "interface", "is_scripting", "is_tracing", "load", "onednn_fusion_enabled",
    "optimize_for_inference", "optimized_execution", "save", "script", "script_if_tracing", "set_fusion_strategy",
    "trace", "trace_module", "unused", "wait",
]  # fmt: skip

T = TypeVar("T")
Final = typing.Final
_NO_TORCHSCRIPT = (
    "Ember has no TorchScript: a TorchScript archive holds TorchScript code, which Ember cannot {}. Save the "
    "model's weights with ember.save(model.state_dict(), path) and load them into the model's class"
)


class ScriptModule(Module):
    """PyTorch's class of scripted modules, for ``isinstance`` checks: Ember never makes one."""


class ScriptFunction:
    """PyTorch's class of scripted functions, for ``isinstance`` checks: Ember never makes one."""


def is_scripting() -> bool:
    """False: Ember runs code eagerly, so branches for TorchScript are not taken."""
    return False


def is_tracing() -> bool:
    """False: Ember runs code eagerly, so branches for the tracer are not taken."""
    return False


def script(obj: Any, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None, example_inputs: Any = None) -> Any:
    """``obj`` itself (a module, function or class), run eagerly."""
    return obj


def _run_example(func: Any, example_inputs: Any, example_kwarg_inputs: Any) -> None:
    if example_kwarg_inputs is not None:
        func(**example_kwarg_inputs)
    elif isinstance(example_inputs, tuple):
        func(*example_inputs)
    elif example_inputs is not None:
        func(example_inputs)


def trace(func: Any, example_inputs: Any = None, optimize: Any = None, check_trace: bool = True,
          check_inputs: Any = None, check_tolerance: float = 1e-5, strict: bool = True, _force_outplace: bool = False,
          _module_class: Any = None, _compilation_unit: Any = None, example_kwarg_inputs: Any = None,
          _store_inputs: bool = True) -> Any:  # fmt: skip
    """``func`` itself, after one call on ``example_inputs`` (a tuple of arguments, or one argument)."""
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("trace: example_inputs or example_kwarg_inputs must be given")
    _run_example(func, example_inputs, example_kwarg_inputs)
    return func


def trace_module(mod: Module, inputs: dict[str, Any], *args: Any, **kwargs: Any) -> Module:
    """``mod`` itself, after calling each named method on its example inputs."""
    for name, example in inputs.items():
        _run_example(getattr(mod, name), example, None)
    return mod


def script_if_tracing(fn: T) -> T:
    """``fn`` as it is."""
    return fn


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """Leave a function out of TorchScript (``@ignore`` or ``@ignore(drop=True)``): for Ember, as it is."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn: T) -> T:
    """``fn`` as it is."""
    return fn


def export(fn: T) -> T:
    """``fn`` as it is."""
    return fn


def interface(obj: T) -> T:
    """``obj`` as it is."""
    return obj


def annotate(the_type: Any, the_value: T) -> T:
    """``the_value``: a type annotation for TorchScript."""
    return the_value


class Future(Generic[T]):
    """The result of :func:`fork`: Ember runs the call at once, so the value is ready."""

    def __init__(self, value: T) -> None:
        self._value = value

    def wait(self) -> T:
        return self._value

    def value(self) -> T:
        return self._value

    def done(self) -> bool:
        return True

    def then(self, callback: Callable[[Future[T]], Any]) -> Future[Any]:
        return Future(callback(self))


def fork(func: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """Call ``func`` (at once; TorchScript would run it asynchronously) and return its :class:`Future`."""
    return Future(func(*args, **kwargs))


def wait(future: Future[T]) -> T:
    """The value of a :func:`fork`."""
    return future.wait()


def freeze(mod: Module, preserved_attrs: Any = None, optimize_numerics: bool = True) -> Module:
    """``mod`` itself; as PyTorch, only a module in eval mode may be frozen."""
    if mod.training:
        raise RuntimeError("freeze: freezing is only implemented for modules in eval mode; call .eval() first")
    return mod


def optimize_for_inference(mod: Module, other_methods: Any = None) -> Module:
    """``mod`` in eval mode."""
    return mod.eval()


@contextlib.contextmanager
def optimized_execution(should_optimize: bool) -> Iterator[None]:
    """A block run as any other (TorchScript's optimizer switch)."""
    yield


_FUSION: dict[str, Any] = {"onednn": False, "strategy": [("STATIC", 2), ("DYNAMIC", 10)]}


def enable_onednn_fusion(enabled: bool) -> None:
    """Kept for scripts that set it; Ember's kernels do not depend on it."""
    _FUSION["onednn"] = bool(enabled)


def onednn_fusion_enabled() -> bool:
    """What :func:`enable_onednn_fusion` last set."""
    return bool(_FUSION["onednn"])


def set_fusion_strategy(strategy: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Kept for scripts that set it; returns the previous strategy, as PyTorch."""
    old, _FUSION["strategy"] = _FUSION["strategy"], list(strategy)
    return old  # type: ignore[no-any-return]


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    """Refused: Ember cannot write TorchScript (see the module's docstring)."""
    raise RuntimeError("jit.save: " + _NO_TORCHSCRIPT.format("write"))


def load(f: Any, map_location: Any = None, _extra_files: Any = None, _restore_shapes: bool = False) -> Any:
    """Refused: Ember cannot run TorchScript (see the module's docstring)."""
    raise RuntimeError("jit.load: " + _NO_TORCHSCRIPT.format("run"))
