"""Independent parts of a kernel's work on a few threads (NumPy releases the GIL inside its loops).

Off by default: on the 2-core machine, idle, every split kernel measured slower on 2 threads than on one
(benchmarks/README.md, "Measurements behind kernel choices"). ``EMBER_KERNEL_THREADS=N`` turns it on (for
machines with more cores, where it is yet to be measured).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

#: elements per part below which a thread costs more than it saves
_MIN_PART = 1 << 16

_state = threading.local()  # .busy: this thread is running a part (then nested calls run serially)
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_key: tuple[int, int] = (0, 0)  # (pid, workers) of the pool: a forked child, or a new count, makes another


@functools.cache
def _default_threads() -> int:
    v = os.environ.get("EMBER_KERNEL_THREADS", "")
    return max(1, min(int(v), 8)) if v.isdigit() else 1


def kernel_threads() -> int:
    """How many threads :func:`parallel` uses (1 unless ``EMBER_KERNEL_THREADS`` asks for more)."""
    return _default_threads()


def _get_pool(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_key
    key = (os.getpid(), workers)
    with _lock:
        if _pool is None or _pool_key != key:
            if _pool is not None and _pool_key[0] == key[0]:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="ember-kernel")
            _pool_key = key
        return _pool


def _run(fn: Callable[[int, int], None], lo: int, hi: int) -> None:
    _state.busy = True
    try:
        fn(lo, hi)
    finally:
        _state.busy = False


def parallel(xp: Any, n: int, size: int, fn: Callable[[int, int], None]) -> None:
    """Call ``fn(lo, hi)`` over a partition of ``range(n)`` (parts must write disjoint results), on up to
    :func:`kernel_threads` threads when the work (``size`` elements in all) is large enough and ``xp`` is
    NumPy; the calling thread takes the first part."""
    threads = kernel_threads()
    parts = min(threads, n, size // _MIN_PART)
    if parts <= 1 or getattr(xp, "__name__", "") != "numpy" or getattr(_state, "busy", False):
        fn(0, n)
        return
    bounds = [n * i // parts for i in range(parts + 1)]
    pool = _get_pool(threads - 1)
    futures: list[Future[None]] = [pool.submit(_run, fn, bounds[i], bounds[i + 1]) for i in range(1, parts)]
    try:
        _run(fn, bounds[0], bounds[1])
    finally:
        for f in futures:
            f.result()
