"""``detect_anomaly``: name the first operator (and the user's source line) that made a NaN/Inf."""

from __future__ import annotations

import os
import re
import traceback
from functools import lru_cache
from typing import Any

from ._grad_mode import ANOMALY_USED, STATE

__all__ = ["detect_anomaly", "AnomalyError", "is_anomaly_enabled", "set_detect_anomaly"]


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


# The installed package's own folder: a frame is Ember's when its file lies under it. A path substring
# such as "/ember/" would also match a user's checkout or project folder named ``ember``.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_FRAME_FILE = re.compile(r'\s*File "(.*)", line \d+')


def _canon(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


@lru_cache(maxsize=1024)
def _is_ember_file(filename: str) -> bool:
    if filename.startswith("<"):  # <stdin>, <string>, <frozen ...>
        return False
    root, path = _canon(_PACKAGE_DIR), _canon(filename)
    try:
        return os.path.commonpath([root, path]) == root
    except ValueError:  # different drives (Windows)
        return False


def _user_line(trace: list[str] | None) -> str:
    """The innermost frame of ``trace`` (``traceback.format_stack`` lines) outside Ember's package."""
    if not trace:
        return "(unknown source)"
    for frame in reversed(trace):
        m = _FRAME_FILE.match(frame)
        if m is None or not _is_ember_file(m.group(1)):
            return frame.strip()
    return trace[-1].strip()


def check_forward(name: str, results: tuple[Any, ...]) -> None:
    for i, r in enumerate(results):
        kind = _bad(r)
        if kind:
            where = _user_line(traceback.format_stack()[:-3])
            raise AnomalyError(
                f"detect_anomaly: {name} produced {kind} in forward output {i} (shape {tuple(r.shape)}), created "
                f"at:\n{where}"
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
        if self._on:
            ANOMALY_USED[0] = True
        STATE.anomaly = self._on
        return self

    def __exit__(self, *exc: object) -> None:
        STATE.anomaly = self._prev.pop()


class set_detect_anomaly:  # noqa: N801 - PyTorch's name
    """Turn anomaly detection on or off from here (this thread); as a context manager, until the block ends."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._prev = STATE.anomaly
        on = bool(mode) and check_nan
        if on:
            ANOMALY_USED[0] = True
        STATE.anomaly = on

    def __enter__(self) -> set_detect_anomaly:
        return self

    def __exit__(self, *exc: object) -> None:
        STATE.anomaly = self._prev


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on in this thread."""
    return bool(STATE.anomaly)
