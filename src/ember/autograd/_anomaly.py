"""``detect_anomaly``: name the first operator (and the user's source line) that made a NaN/Inf."""

from __future__ import annotations

from typing import Any

from ._grad_mode import STATE

__all__ = ["detect_anomaly", "AnomalyError"]


class AnomalyError(FloatingPointError):
    """A NaN or Inf appeared in forward or backward while anomaly detection was on."""


def _bad(t: Any) -> str | None:
    if t is None or t.dtype.kind not in "fc":
        return None
    xp = t._backend.xp
    arr = t._data
    if bool(xp.isnan(arr).any()):
        return "NaN"
    if bool(xp.isinf(arr).any()):
        return "Inf"
    return None


def _user_line(trace: list[str] | None) -> str:
    if not trace:
        return "(unknown source)"
    for frame in reversed(trace):
        if "/ember/" not in frame.replace("\\", "/").split('", line')[0]:
            return frame.strip()
    return trace[-1].strip()


def check_forward(name: str, results: tuple[Any, ...]) -> None:
    import traceback

    for i, r in enumerate(results):
        kind = _bad(r)
        if kind:
            where = _user_line(traceback.format_stack()[:-3])
            raise AnomalyError(
                f"detect_anomaly: {name} produced {kind} in forward output {i} (shape {r.shape}), created at:\n{where}"
            )


def check_backward(node: Any, grads: tuple[Any, ...]) -> None:
    for i, g in enumerate(grads):
        kind = _bad(g)
        if kind:
            raise AnomalyError(
                f"detect_anomaly: {node.name} returned {kind} in the gradient of its input {i}; "
                f"the operation was created at:\n{_user_line(node._trace)}"
            )


class detect_anomaly:  # noqa: N801 - PyTorch's name
    """Context manager: check every result and gradient for NaN/Inf and name the operation at fault.

    Slow (it inspects every array); use it to debug, not to train.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self._on = check_nan
        self._prev: list[bool] = []

    def __enter__(self) -> detect_anomaly:
        self._prev.append(STATE.anomaly)
        STATE.anomaly = self._on
        return self

    def __exit__(self, *exc: object) -> None:
        STATE.anomaly = self._prev.pop()
