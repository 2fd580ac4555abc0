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

**Small products on one thread** (:func:`matmul`: the products of the convolution kernels and ``linear``). OpenBLAS
splits a GEMM over its threads from 2**19 multiply-adds (2 threads), and the caller then waits for the other
thread's part. When the other core is busy (another process), that wait lasts a time slice. Below 2**22
multiply-adds (LeNet-5's linear layers: at most 3.1e6) the split saved nothing even with both cores free (LeNet-5's
first linear layer, forward, best of 15 rounds at load 4: 43 us on two threads, 42 on one; its weight gradient 32
against 36), so such products run on one thread. LeNet-5's training step in one process at load 4-7, median of
15 rounds of 30 steps: 110 ms with OpenBLAS's threads, 51 ms with this rule (20 ms with the rule at 2**24, which
also takes its convolution's products of 1.5e7 off the threads: those ran 2x faster on two free cores, 224 against
424 us, so they keep OpenBLAS's threads). The MLP's products (3.4e7 and more) keep them.

**Batches of products split over Ember's threads.** A Winograd layer multiplies 16 matrices in one ``np.matmul``;
OpenBLAS split each of them over its threads, so each waited for both threads 16 times. With OpenBLAS on one thread
the batch is split over Ember's kernel threads instead (``parallel_blocks``: ranges taken in turn, so a thread
that gets its core late takes fewer). The 8x64x32x32 layer's three products, 2 threads, best / median of 21 rounds
at load 6: forward 9.46 / 152 ms on OpenBLAS's threads against 2.70 / 2.89 split, dU 5.32 / 39.1 against 2.96 /
8.50, dV 1.35 / 13.4 against 1.38 / 3.23; the 4-layer conv-stack step at load 7-11, in one process, median 4,035
against 157 ms (best 850 against 135). The split weighs a batch by its work (``_MACS_PER_ELEMENT``), not its
output alone: Winograd F(4x4, 3x3)'s ``dU`` (outputs of (36, 64, 64), sums over 576 tiles) ran on the calling
thread only.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import threading
from typing import Any

import numpy as np

from . import _kernels_threads

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


@functools.cache
def small_gemm_mnk() -> float:
    """M*N*K up to which NumPy's OpenBLAS runs a float32/64 product on its small-matrix kernels (no packing): 1e6
    on the cores of ``_SMALL_GEMM_CORES``, 0.0 (none known) for another core, another BLAS, or when the core
    cannot be read. One thread, a (97, 204) x (204, 51) float64 product took 38.5 us, its two halves of rows
    29.4 (2026-11-26, Sapphire Rapids run as SkylakeX; ``_kernels_rnn_pieces.RNNPieces._mm``)."""
    lib = _library()
    for name in ("scipy_openblas_get_corename64_", "openblas_get_corename64_", "openblas_get_corename"):
        fn = None if lib is None else getattr(lib, name, None)
        if fn is not None:
            fn.restype = ctypes.c_char_p
            core = (fn() or b"").decode("ascii", "replace").strip().lower()
            return 1e6 if core in _SMALL_GEMM_CORES else 0.0
    return 0.0


#: a product of fewer multiply-adds than this (M * N * K, times its batch) runs on one OpenBLAS thread (``matmul``)
SMALL_PRODUCT = 1 << 22
#: OpenBLAS splits one matrix's GEMM only above this many multiply-adds (its interface/gemm.c: 65536 *
#: GEMM_MULTITHREAD_THRESHOLD (4) per thread, on 2 threads): below, it runs on one thread already
_SPLIT_MIN = 1 << 19
#: a batch of products counts as ``K / _MACS_PER_ELEMENT`` elements per output element when ``parallel_blocks``
#: decides whether to split it (one-thread sgemm here: ~16 multiply-adds in the time of one element of a ufunc
#: pass), so that a batch with small outputs and long sums (Winograd's ``dU = dM V^T``: (64, 64) outputs, K = 576
#: tiles) is split by its work too
_MACS_PER_ELEMENT = 16
_one_lock = threading.Lock()
_one_depth = 0  # matmul calls running with OpenBLAS set to one thread
_one_restore = 1  # the thread count to restore when the last of them ends
_fns: tuple[Any, ...] | None = None


def _controls() -> tuple[Any, ...]:
    """``_find()``, asked once: ``(get, set)`` of NumPy's OpenBLAS thread count, or ``()``."""
    global _fns
    if _fns is None:
        _fns = _find()
    return _fns


def threads() -> int:
    """NumPy's OpenBLAS thread count (1 when it cannot be read)."""
    fns = _controls()
    return int(fns[0]()) if fns else 1


def _one_thread(enter: bool) -> None:
    """Set NumPy's OpenBLAS to one thread on the first of overlapping calls, back on the last (a lock and a
    depth count: two Python threads' products must not leave it at one thread)."""
    global _one_depth, _one_restore
    with _one_lock:
        if not _controls():
            return
        get, put = _controls()
        if enter:
            if _one_depth == 0:
                _one_restore = int(get())
                if _one_restore > 1:
                    put(1)
            _one_depth += 1
        else:
            _one_depth -= 1
            if _one_depth == 0 and _one_restore > 1:
                put(_one_restore)


def _row_major(x: Any) -> bool:
    """Whether NumPy passes the 2-d ``x`` to the BLAS untransposed (rows of unit stride, NumPy's ``is_blasable2d``)."""
    s0, s1 = x.strides
    size = x.itemsize
    return s1 == size and s0 % size == 0 and s0 // size >= x.shape[1]


def _small_kernel(a: Any, b: Any, mkn: int) -> bool:
    """Whether NumPy's OpenBLAS runs the 2-d float32/64 ``a @ b`` on its small-matrix kernels, which are never split
    over its threads (so there is no thread count to set). OpenBLAS takes NumPy's row-major call as the column-major
    ``b^T a^T`` and, on the cores of ``_SMALL_GEMM_CORES``, permits M*N*K <= 1e6 unless that product's first operand
    (``b``) is transposed and the second too, or M*N > 1200, or K < 32 (``sgemm_small_kernel_permit_skylakex.c``).
    LeNet-5's (64, 84) x (84, 120) at 2 OpenBLAS threads: 10.3 us through the one-thread setting, 7.7 plain."""
    if mkn > small_gemm_mnk() or a.ndim != 2 or b.ndim != 2 or a.dtype.char not in "fd" or b.dtype != a.dtype:
        return False
    if _row_major(b):
        return True
    m, k = a.shape
    return _row_major(a) and m * b.shape[1] <= 1200 and k >= 32


def _split_ok(a: Any, b: Any) -> bool:
    """Whether ``a @ b`` is a batch of matrices that :func:`_one_thread_matmul` splits: a 3-d ``a`` and a 2-d ``b``
    or a 3-d one of the same batch."""
    return a.ndim == 3 and a.shape[0] > 1 and (b.ndim == 2 or (b.ndim == 3 and b.shape[0] == a.shape[0]))


def _one_thread_matmul(a: Any, b: Any, out: Any = None) -> Any:
    """``np.matmul(a, b)`` (into ``out``) with NumPy's OpenBLAS on one thread; a batch of matrices (``_split_ok``)
    split over Ember's kernel threads (``parallel_blocks``: each matrix on one of them, one thread each, so the
    bits do not depend on the thread count)."""
    _one_thread(True)
    try:
        if not _split_ok(a, b):
            return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
        if out is None:
            out = np.empty((a.shape[0], a.shape[1], b.shape[-1]), dtype=np.result_type(a, b))

        def part(lo: int, hi: int) -> None:
            np.matmul(a[lo:hi], b if b.ndim == 2 else b[lo:hi], out=out[lo:hi])

        _kernels_threads.parallel_blocks(np, a.shape[0], out.size * max(1, a.shape[-1] // _MACS_PER_ELEMENT), part)
        return out
    finally:
        _one_thread(False)


def matmul(a: Any, b: Any, out: Any = None) -> Any:
    """``np.matmul(a, b)`` (into ``out``). A floating product that OpenBLAS would split (more than ``_SPLIT_MIN``
    multiply-adds per matrix) runs with OpenBLAS on one thread when it has fewer than ``SMALL_PRODUCT`` in all, and
    so does a larger batch of matrices (``_split_ok``: a Winograd layer's 16 products), split over Ember's kernel
    threads instead (see the module docstring). OpenBLAS's results on one and two threads can differ in their
    last bits (a third of random float32 shapes in that range did), so ``ember.compile`` records such a product as
    one call that its replays make the same way. Another Python thread's product that starts meanwhile also runs
    on one OpenBLAS thread. A product OpenBLAS takes on its unthreaded small-matrix kernels (``_small_kernel``)
    is made as it is."""
    if a.ndim >= 2 and b.ndim >= 2 and a.dtype.kind in "fc" and (_fns or _controls()):  # (another BLAS: as is)
        m, k = a.shape[-2:]
        n = b.shape[-1]
        mkn = m * k * n
        if (
            mkn > _SPLIT_MIN
            and (mkn * max(a.size // (m * k), b.size // (k * n)) < SMALL_PRODUCT or _split_ok(a, b))
            and not _small_kernel(a, b, mkn)
        ):
            rec = _kernels_threads.recorder
            if rec is None:
                return _one_thread_matmul(a, b, out)
            res = rec(_one_thread_matmul, (a, b), {})
            if out is None:
                return res
            out[...] = res
            return out
    return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
