"""``ember.set_num_threads`` / ``get_num_threads``: the threads of the CPU math libraries.

What it controls: the thread pools of the BLAS (OpenBLAS/MKL: matrix products, convolutions through
them) and of OpenMP, through ``threadpoolctl`` when it is installed, and torch's intra-op threads when
the torch backend is loaded. Without ``threadpoolctl`` it sets ``OMP_NUM_THREADS`` and the BLAS
variables, which only take effect in processes started afterwards (DataLoader workers, ``spawn``).
It also sizes the thread pool of the NumPy backend's row kernels (layer norm, softmax, attention, GELU:
``backends/_kernels_threads.kernel_threads``). Ember's other small thread pools (optimizer steps over large
groups, DataLoader threads) are sized by their own arguments, not by this setting.
"""

from __future__ import annotations

import os
import sys

__all__ = ["get_num_interop_threads", "get_num_threads", "set_num_interop_threads", "set_num_threads"]

_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
_num_threads: int | None = None
_interop: int | None = None


def _check(n: object, op: str) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"{op}: expected a positive integer number of threads, got {n!r}")
    return n


def set_num_threads(n: int) -> None:
    """Use ``n`` threads in the BLAS and OpenMP (and torch, when its backend is loaded)."""
    global _num_threads
    _num_threads = _check(n, "set_num_threads")
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        for var in _ENV:
            os.environ[var] = str(n)
    else:
        threadpool_limits(limits=n)  # stays in force (not used as a context manager)
    torch = sys.modules.get("torch")
    # PyTorch itself, known by its compiled core (with torch aliased to Ember, this function; Ember has an ``_C`` too)
    if torch is not None and getattr(getattr(torch, "_C", None), "__name__", None) == "torch._C":
        torch.set_num_threads(n)


def get_num_threads() -> int:
    """The number set with ``set_num_threads``, else the BLAS's current thread count, else the CPU count."""
    if _num_threads is not None:
        return _num_threads
    try:
        from threadpoolctl import threadpool_info

        counts = [int(i["num_threads"]) for i in threadpool_info() if i.get("user_api") == "blas"]
    except ImportError:
        counts = []
    if counts:
        return max(counts)
    for var in _ENV:
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return os.cpu_count() or 1


def set_num_interop_threads(n: int) -> None:
    """Accepted for PyTorch compatibility: Ember runs operators one after another (no inter-op pool)."""
    global _interop
    _interop = _check(n, "set_num_interop_threads")


def get_num_interop_threads() -> int:
    """Threads for running independent operations concurrently (``set_num_interop_threads``; 1 by default)."""
    return _interop if _interop is not None else 1
