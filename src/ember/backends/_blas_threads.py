"""NumPy's OpenBLAS beside Ember's kernel threads: a short spin for its idle threads.

**Short spin** (:func:`shorten_spin`, when the NumPy backend is made). After each threaded product OpenBLAS's idle
threads spin, waiting for the next one, for 2**28 CPU cycles (about 0.1 s) before they sleep. Ember's row
kernels (``_kernels_threads.parallel_rows``: GELU, layer norm, softmax ...) nearly always run right after a
product, so their second thread found its core taken by a spinning OpenBLAS thread: a GPT training step used
380 ms of CPU for 200 ms of wall time. OpenBLAS reads its spin (``OPENBLAS_THREAD_TIMEOUT``) when it starts its
threads; Ember sets it to 2**22 cycles (1-2 ms) and has OpenBLAS stop its threads, which start again on the next
threaded call with the shorter spin. Back-to-back products (an MLP's) still find them awake. A user's own
``OPENBLAS_THREAD_TIMEOUT`` (or ``GOTO_THREAD_TIMEOUT``) is left alone; ``OPENBLAS_THREAD_TIMEOUT=28`` restores
OpenBLAS's default. The figures behind 22 are in ``benchmarks/README.md`` ("Measurements behind kernel
choices"). It is done once, when Ember is imported (stopping OpenBLAS's threads while another thread runs a
BLAS call would not be safe), and does nothing for another BLAS.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
from typing import Any

#: OpenBLAS's spin before its idle threads sleep, log2 of CPU cycles (OpenBLAS's own default: 28)
SPIN_LOG2 = 22
_TIMEOUT_VARS = ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")

_lock = threading.Lock()
_lib: Any = None  # NumPy's OpenBLAS (a ctypes library); False when not found
_spin: bool | None = None  # shorten_spin's answer, once asked


def _library() -> Any:
    """NumPy's OpenBLAS as a ctypes library, or None: the copy NumPy's wheels bundle (``numpy.libs``,
    ``numpy/.dylibs``), else the one ``threadpoolctl`` finds when it is installed."""
    global _lib
    if _lib is None:
        _lib = False
        import numpy as np

        here = os.path.dirname(np.__file__)
        for path in sorted(glob.glob(f"{here}.libs/*openblas*") + glob.glob(f"{here}/.dylibs/*openblas*")):
            try:
                _lib = ctypes.CDLL(path)  # loaded already by NumPy: the same copy
                return _lib
            except OSError:  # pragma: no cover - a file that is not a library
                continue
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            return None
        for lib in ThreadpoolController().lib_controllers:
            if lib.internal_api == "openblas" and "numpy" in str(lib.filepath):
                _lib = lib.dynlib
                break
    return _lib or None


def _find() -> tuple[Any, ...]:
    """``(get, set)`` of NumPy's OpenBLAS thread count, or ``()`` when not available."""
    lib = _library()
    if lib is None:
        return ()
    for prefix in ("scipy_openblas", "openblas"):  # SciPy's wheels prefix the API and add a 64_ suffix
        for suffix in ("64_", ""):
            get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            if get is not None and put is not None:
                return get, put
    return ()


def spin_log2() -> int | None:
    """The spin OpenBLAS's threads will be (re)started with (log2 of cycles; 0: OpenBLAS's default), or None
    when that cannot be read."""
    lib = _library()
    fn = None if lib is None else getattr(lib, "openblas_thread_timeout", None)
    if fn is None:
        return None
    fn.restype = ctypes.c_uint
    return int(fn())


def shorten_spin() -> bool:
    """Once per process: have NumPy's OpenBLAS threads spin ``2**SPIN_LOG2`` cycles, not 2**28, before they
    sleep (see the module docstring). True when done; False when the user set the spin, or for another BLAS."""
    global _spin
    with _lock:
        if _spin is None:
            _spin = False
            lib = _library()
            read_env: Any = getattr(lib, "openblas_read_env", None)
            shutdown: Any = getattr(lib, "blas_thread_shutdown_", None)
            user_set = any(os.environ.get(v, "").strip() for v in _TIMEOUT_VARS)
            if read_env is not None and shutdown is not None and not user_set:
                read_env.restype = shutdown.restype = None
                os.environ["OPENBLAS_THREAD_TIMEOUT"] = str(SPIN_LOG2)
                try:
                    read_env()  # OpenBLAS keeps its environment's values: the new spin stays after the del
                finally:
                    del os.environ["OPENBLAS_THREAD_TIMEOUT"]  # not passed on to other programs
                shutdown()  # its threads start again on the next threaded call, with the new spin
                _spin = True
        return _spin


#: OpenBLAS cores whose float32/64 GEMM has small-matrix kernels taken for M*N*K <= 1e6 (Cooperlake's and
#: SapphireRapids' kernel lists include SkylakeX's; ``dgemm_small_kernel_permit_skylakex.c``: not for a
#: transposed A with a plain B, column-major, unless M*N <= 1200 and K >= 32)
_SMALL_GEMM_CORES = ("skylakex", "cooperlake", "sapphirerapids")


def small_gemm_mnk() -> float:
    """M*N*K up to which NumPy's OpenBLAS runs a float32/64 product on its small-matrix kernels (no packing): 1e6
    on the cores of ``_SMALL_GEMM_CORES``, 0.0 (none known) for another core, another BLAS, or when the core
    cannot be read. One thread, a (97, 204) x (204, 51) float64 product took 38.5 us, its two halves of rows
    29.4 (2026-11-26, Sapphire Rapids run as SkylakeX; ``_kernels_rnn.RNNKernels._mm``)."""
    lib = _library()
    for name in ("scipy_openblas_get_corename64_", "openblas_get_corename64_", "openblas_get_corename"):
        fn = None if lib is None else getattr(lib, name, None)
        if fn is not None:
            fn.restype = ctypes.c_char_p
            core = (fn() or b"").decode("ascii", "replace").strip().lower()
            return 1e6 if core in _SMALL_GEMM_CORES else 0.0
    return 0.0
