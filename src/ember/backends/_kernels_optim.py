"""Reference in-place optimizer updates (NumPy and CuPy): SGD and Adam steps, ``axpy`` and ``scal``, and
the gradient unscaling of mixed-precision training (``unscale_grads_``).

On NumPy, ``axpy``/``scal`` are one pass without a temporary: through SciPy's BLAS when it is installed (its
own OpenBLAS, limited to one thread), else through NumPy's own OpenBLAS by ctypes where its ILP64 CBLAS symbols are
found (NumPy's wheels: a NumPy-only install), else NumPy's in-place operations (a temporary and two passes); other
arrays (CuPy) use the array library's in-place operations. The torch backend overrides the steps with torch's
fused kernels (``_fused_sgd_``, ``_fused_adam_``).
"""

from __future__ import annotations

import ctypes
import math
import os
from typing import Any

import numpy as np

from ._blas_threads import _library, _one_thread_matmul, threads

_BLAS: Any = None  # None: not looked up yet; False: unavailable; else scipy.linalg.blas
_NUMPY_BLAS: Any = None  # None: not looked up yet; False: unavailable; else {"f"/"d": (axpy, scal)}


def _numpy_blas() -> Any:
    """``{"f": (axpy, scal), "d": (axpy, scal)}``: NumPy's own OpenBLAS ``cblas_?axpy``/``cblas_?scal`` by ctypes,
    called as ``axpy(y, a, x)`` and ``scal(y, a)`` on C-contiguous arrays; None when NumPy's BLAS is not an
    OpenBLAS with ILP64 CBLAS symbols (``[scipy_]cblas_saxpy64_``: 64-bit sizes, the names say so).

    The route without SciPy: one pass, where NumPy's ``y += a * x`` makes a temporary and takes two. A ctypes
    call costs ~1-3 us more than SciPy's wrapper, and OpenBLAS splits a vector over 10,000 elements over its
    threads, so SciPy's single-threaded copy stays first when it is installed (see ``_blas``).
    """
    global _NUMPY_BLAS
    if _NUMPY_BLAS is None:
        _NUMPY_BLAS = False
        lib = _library()
        for prefix in ("scipy_", ""):
            names = {f"{t}{op}": f"{prefix}cblas_{t}{op}64_" for t in "sd" for op in ("axpy", "scal")}
            if lib is None or not all(hasattr(lib, n) for n in names.values()):
                continue
            i64, ptr = ctypes.c_int64, ctypes.c_void_p
            fns: dict[str, tuple[Any, Any]] = {}
            for char, t, num in (("f", "s", ctypes.c_float), ("d", "d", ctypes.c_double)):
                ax, sc = getattr(lib, names[f"{t}axpy"]), getattr(lib, names[f"{t}scal"])
                ax.restype, ax.argtypes = None, [i64, num, ptr, i64, ptr, i64]
                sc.restype, sc.argtypes = None, [i64, num, ptr, i64]
                fns[char] = (
                    lambda y, a, x, ax=ax: ax(y.size, a, x.ctypes.data, 1, y.ctypes.data, 1),
                    lambda y, a, sc=sc: sc(y.size, a, y.ctypes.data, 1),
                )
            _NUMPY_BLAS = fns
            break
    return _NUMPY_BLAS or None


def _scipy_blas() -> Any:
    """SciPy's BLAS module, set up so that it does not compete with NumPy's BLAS threads.

    SciPy wheels ship their own OpenBLAS. Its worker threads spinning beside NumPy's on a small machine
    make NumPy's matrix products markedly slower, so SciPy's copy is limited to one thread (with
    threadpoolctl); without threadpoolctl, or when that cannot be arranged, SciPy's BLAS is not used.
    """
    global _BLAS
    if _BLAS is None:
        _BLAS = False
        try:
            from scipy.linalg import blas
            from threadpoolctl import ThreadpoolController
        except ImportError:
            return None
        numpy_dir = os.path.dirname(np.__file__)
        for lib in ThreadpoolController().lib_controllers:
            # NumPy's own BLAS sits in numpy/ or numpy.libs/; only a separate copy is limited
            if lib.user_api == "blas" and not lib.filepath.startswith((numpy_dir, numpy_dir + ".libs")):
                lib.set_num_threads(1)
        _BLAS = blas
    return _BLAS or None


#: elements from which OpenBLAS's split of an axpy over its threads (from 10,000 elements: its interface/axpy.c)
#: paid (float32, 2 threads, best of 15 rounds of 200 at load 3.4, session 10: 10,080 elements 4.3 us split against
#: 1.6 us through SciPy's one thread, 48,000: 6.4 against 5.2, 131,072: 10.2 against 12.7); shorter vectors
#: (LeNet-5's weights) stay on one thread and do not wake OpenBLAS's threads
_SPLIT_AXPY_PAYS = 1 << 17
#: elements above which OpenBLAS splits a float dot over its threads (0.3.x: its x86_64 dot kernels run
#: ``n <= 10000`` on one)
_SPLIT_DOT = 10_000


def _blas(y: Any, threaded: bool = True) -> Any:
    """``(axpy, scal)`` for ``y``'s dtype, called as ``axpy(y, a, x)`` (``x`` C-contiguous, shaped and typed
    like ``y``) and ``scal(y, a)``, when ``y`` is a writeable C-contiguous native float32/float64 NumPy array and a
    BLAS is at hand: SciPy's (one thread, the cheapest call), else NumPy's own (:func:`_numpy_blas`); else None.

    ``threaded``: a vector long enough for OpenBLAS's split to pay (``_SPLIT_AXPY_PAYS``) takes NumPy's own BLAS
    when that runs on several threads, as PyTorch's in-place ``add_`` does (SGD's update of the MLP benchmark, 2
    threads, wall, median of 21 rounds, load 6, boosted: 206 -> 120 us; PyTorch 101). Blocked steps
    (:func:`_blocks`) ask without: OpenBLAS's threads, woken for each block, lost there (SGD momentum 462 -> 533
    us, Adam 1,439 -> 1,745 us)."""
    if (
        not isinstance(y, np.ndarray)
        or not y.size  # (SciPy's wrappers refuse empty vectors)
        or not y.flags.c_contiguous
        or not y.flags.writeable
        or y.dtype.char not in "fd"
        or not y.dtype.isnative
    ):
        return None
    blas, own = _scipy_blas(), _numpy_blas()
    if own is not None and (blas is None or (threaded and y.size >= _SPLIT_AXPY_PAYS and threads() > 1)):
        return own[y.dtype.char]
    if blas is None:
        return None
    axpy, scal = (blas.saxpy, blas.sscal) if y.dtype.char == "f" else (blas.daxpy, blas.dscal)
    return (lambda y, a, x: axpy(x.reshape(-1), y.reshape(-1), a=a)), (lambda y, a: scal(a, y.reshape(-1)))


#: elements per block of a blocked step: a block of each of an Adam step's five arrays (5 x 256 KiB in float32)
#: stays in a 2 MiB L2 cache through the step's ten passes, where whole arrays went out to L3 and back on each
#: pass. The MLP benchmark's optimizer step inside its training step, one thread, thread time, median of 48
#: rounds in rotated order (load 7-9): Adam 2,047 -> 1,917 us, SGD with momentum 688 -> 642 us. A multiple of
#: any BLAS kernel's unrolling, so every element meets the same code as unblocked: the same bits.
_BLOCK = 1 << 16


def _blocks(*arrays: Any) -> tuple[list[tuple[Any, ...]], Any] | None:
    """``(blocks, (axpy, scal))``: the arrays (a None stays None) cut into flat blocks of ``_BLOCK`` elements, one
    tuple per block, and the BLAS pair of :func:`_blas` for them, when they are writeable C-contiguous NumPy arrays
    of one shape and dtype holding at least two blocks, the second (the gradient: only read) sharing memory with
    none of the others, and a single-threaded BLAS is at hand; else None (work on them whole). Without SciPy, on
    several threads, whole arrays on NumPy's BLAS threads won (2 threads, momentum 491 -> 362 us, Adam
    1,609 -> 1,499 us; one thread: blocks, Adam 1,696 -> 1,554 us)."""
    first = arrays[0]
    if type(first) is not np.ndarray or first.size < 2 * _BLOCK:
        return None
    for a in arrays:
        if a is not None and (
            type(a) is not np.ndarray
            or a.shape != first.shape
            or a.dtype != first.dtype
            or not a.flags.c_contiguous
            or not a.flags.writeable
        ):
            return None
    fns, own = _blas(first, threaded=False), _numpy_blas()
    if fns is None or (own is not None and fns is own[first.dtype.char] and threads() > 1):
        return None  # (NumPy's BLAS on several threads: whole arrays, each pass split over them, measured faster)
    g = arrays[1]
    if any(a is not None and np.may_share_memory(a, g) for a in arrays[:1] + arrays[2:]):
        return None
    flat = [None if a is None else a.reshape(-1) for a in arrays]
    parts = [tuple(None if f is None else f[lo : lo + _BLOCK] for f in flat) for lo in range(0, first.size, _BLOCK)]
    return parts, fns


class OptimKernels:
    """In-place parameter updates written against ``self.xp`` (NumPy's names)."""

    xp: Any
    #: the steps use the cores themselves (a long vector's axpy on NumPy's BLAS threads, blocked steps): the
    #: optimizer runs them one after another, not on its thread pool. Side by side they contended: MLP
    #: 784-1024-1024-10, 2 threads, opt.step with the pool / without: SGD 6,776 / 432 us, Adam 6,989 / 4,744 us
    #: (before these kernels, with the pool: 874 and 5,249 us)
    threaded_steps = True

    def axpy(self, y: Any, a: float, x: Any) -> None:
        """``y += a * x`` in place, without a temporary where the library allows."""
        fns = _blas(y)
        if fns is not None and isinstance(x, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape:
            views = x.base is not None or y.base is not None  # (only a view can overlap another array)
            if not x.flags.c_contiguous or (views and x is not y and np.may_share_memory(x, y)):
                x = np.array(x, order="C")  # (a copy: BLAS reads x while writing y)
            fns[0](y, a, x)
        else:
            y += a * x

    def dot(self, a: Any, b: Any) -> Any:
        """The inner product of two flat vectors of one dtype (a 0-d array; ``matmul``: NumPy's and torch's names
        agree). NumPy's OpenBLAS splits a ddot/sdot of more than ``_SPLIT_DOT`` elements over its threads; here it
        runs on one, so the bits do not depend on the thread count: L-BFGS's 32,284-element float64 dots of
        rnn_time_sequence, 2 threads, wall, median of 15 rounds of 200 at load 3.9: 24.3 us split, 7.1 on one
        thread (the best split round, both cores free: 3.9)."""
        if a.__class__ is np.ndarray and a.size > _SPLIT_DOT and a.dtype.char in "fd" and threads() > 1:
            return _one_thread_matmul(a, b)
        return self.xp.matmul(a, b)

    def scal(self, y: Any, a: float) -> None:
        """``y *= a`` in place."""
        fns = _blas(y)
        if fns is not None:
            fns[1](y, a)
        else:
            y *= a

    def unscale_grads_(self, grads: list[Any], inv_scale: float) -> Any:
        """Multiply every gradient by ``inv_scale`` in place; return a 0-d float32 array, 1 when any of them
        holds an inf or NaN, else 0 (``torch._amp_foreach_non_finite_check_and_unscale_``; no host sync)."""
        xp = self.xp
        found = xp.zeros((), dtype=xp.float32)
        for g in grads:
            found = xp.maximum(found, xp.astype(xp.logical_not(xp.all(xp.isfinite(g))), xp.float32))
            g *= inv_scale
        return found

    def sgd_step(
        self,
        p: Any,
        g: Any,
        buf: Any,
        lr: float,
        weight_decay: float,
        momentum: float,
        dampening: float,
        nesterov: bool,
    ) -> Any:
        """One SGD step on ``p`` in place (``torch.optim.SGD``'s rule); returns the momentum buffer
        (``buf`` is None on the first step and, without momentum, stays None). A step of several passes over a
        large parameter runs block by block (:func:`_blocks`)."""
        args = (lr, weight_decay, momentum, dampening, nesterov)
        if (momentum or weight_decay) and (buf is not None or not momentum):
            blocked = _blocks(p, g, buf)
            if blocked is not None:
                for pb, gb, bb in blocked[0]:
                    self._sgd_step(pb, gb, bb, *args, *blocked[1])
                return buf
        return self._sgd_step(p, g, buf, *args, self.axpy, self.scal)

    def _sgd_step(
        self,
        p: Any,
        g: Any,
        buf: Any,
        lr: float,
        weight_decay: float,
        momentum: float,
        dampening: float,
        nesterov: bool,
        axpy: Any,
        scal: Any,
    ) -> Any:
        """The rule of :meth:`sgd_step` with ``axpy(y, a, x)``/``scal(y, a)`` given: :meth:`axpy`/:meth:`scal`, or
        the BLAS routines themselves on blocks :func:`_blocks` checked."""
        if weight_decay:
            g = g + weight_decay * p
        if momentum:
            if buf is None:
                buf = self.xp.copy(g)
            else:
                scal(buf, momentum)
                axpy(buf, 1 - dampening, g)
            g = g + momentum * buf if nesterov else buf
        axpy(p, -lr, g)
        return buf

    def adam_step(
        self,
        p: Any,
        g: Any,
        m: Any,
        v: Any,
        max_v: Any,
        tmp: Any,
        step: int,
        lr: float,
        beta1: float,
        beta2: float,
        eps: float,
        weight_decay: float,
        decoupled: bool,
    ) -> None:
        """One Adam (``decoupled``: AdamW) step on ``p``, ``m``, ``v`` (and ``max_v`` for AMSGrad) in place;
        ``step`` counts from 1 and ``tmp`` is scratch space shaped like ``p``. A large parameter's step runs block
        by block (:func:`_blocks`)."""
        args = (step, lr, beta1, beta2, eps, weight_decay, decoupled)
        blocked = _blocks(p, g, m, v, max_v, tmp)
        if blocked is None:
            self._adam_step(p, g, m, v, max_v, tmp, *args, self.axpy, self.scal)
            return
        for pb, gb, mb, vb, xb, tb in blocked[0]:
            self._adam_step(pb, gb, mb, vb, xb, tb, *args, *blocked[1])

    def _adam_step(
        self,
        p: Any,
        g: Any,
        m: Any,
        v: Any,
        max_v: Any,
        tmp: Any,
        step: int,
        lr: float,
        beta1: float,
        beta2: float,
        eps: float,
        weight_decay: float,
        decoupled: bool,
        axpy: Any,
        scal: Any,
    ) -> None:
        """The rule of :meth:`adam_step`, ``axpy``/``scal`` given as in :meth:`_sgd_step`."""
        xp = self.xp
        if decoupled:
            scal(p, 1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * p
        scal(m, beta1)
        axpy(m, 1 - beta1, g)
        scal(v, beta2)
        xp.multiply(g, g, out=tmp)
        axpy(v, 1 - beta2, tmp)
        bc1, bc2 = 1 - beta1**step, 1 - beta2**step
        if max_v is not None:
            xp.maximum(max_v, v, out=max_v)
            v = max_v
        xp.sqrt(v, out=tmp)
        tmp *= 1 / math.sqrt(bc2)
        tmp += eps
        xp.divide(m, tmp, out=tmp)
        axpy(p, -lr / bc1, tmp)
