# ruff: noqa: N999 - PyTorch's module name (``torch._C``)
"""``torch._C``'s names that Python libraries call, where Ember gives them a meaning.

PyTorch's ``_C`` is its compiled core; Ember has none (its kernels are the backends'), so this module holds only
what libraries on PyTorch call directly: ``_log_api_usage_once`` (torchmetrics calls it when it makes a metric),
which records the use for PyTorch's optional usage logger and does nothing otherwise; Ember has no such logger.
``_get_tracing_state`` is None: ``ember.jit.trace`` runs the function eagerly, so there is never a TorchScript
trace in progress (Pyro asks before silencing tracer warnings).
Code that tells real PyTorch apart checks ``torch._C.__name__ == "torch._C"`` (``backends.real_torch``): this
module is ``ember._C``.
"""

from __future__ import annotations

__all__ = ["_get_tracing_state", "_log_api_usage_once"]


def _log_api_usage_once(event: str) -> None:
    """Records nothing: PyTorch's API-usage logger has no Ember counterpart (``event`` must be a str, as there)."""
    if not isinstance(event, str):
        raise TypeError(f"_log_api_usage_once(): argument 'event' must be str, not {type(event).__name__}")


def _get_tracing_state() -> None:
    """None: no TorchScript trace is ever in progress (``ember.jit.trace`` runs eagerly)."""
    return None
