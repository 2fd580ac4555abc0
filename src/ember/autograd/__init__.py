"""Reverse-mode autodiff: the engine, user-defined Functions, gradient checks, anomaly detection."""

from . import functional, graph, profiler  # noqa: F401 - ember.autograd.profiler, as PyTorch's
from ._anomaly import AnomalyError, detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from ._compat import Variable, is_multithreading_enabled, is_view_replay_enabled, set_multithreading_enabled
from ._complex_ops import COMPLEX_GRAD_OPS
from ._engine import Gradients, RemovableHandle, backward, is_nonfinite_check_enabled, set_nonfinite_check
from ._function import Function, FunctionCtx, Op
from ._grad_api import grad
from ._grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ._gradcheck import gradcheck, gradgradcheck


def __getattr__(name: str) -> object:
    """``ember.autograd.forward_ad`` and ``.function`` on first use (forward_ad sits above the operators, which this
    package sits under)."""
    if name in ("forward_ad", "function"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "COMPLEX_GRAD_OPS",
    "AnomalyError",
    "Function",
    "FunctionCtx",
    "Gradients",
    "Op",
    "Variable",
    "RemovableHandle",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "functional",
    "grad",
    "graph",
    "gradcheck",
    "gradgradcheck",
    "inference_mode",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "is_multithreading_enabled",
    "is_nonfinite_check_enabled",
    "is_view_replay_enabled",
    "no_grad",
    "set_detect_anomaly",
    "set_grad_enabled",
    "set_multithreading_enabled",
    "set_nonfinite_check",
]
