"""How an Ember process uses memory: glibc's malloc tuned for the churn of large temporary arrays.

By default glibc serves each allocation above a threshold (128 KiB, raised adaptively) with a fresh
``mmap`` and returns it with ``munmap`` when freed, and gives free memory at the top of the heap back to
the kernel past 128 KiB. A training step allocates and frees the same large temporaries (activations,
im2col columns, gradients) every time, so each step faults every page of them in again (a LeNet-5 step:
benchmarks/README.md, "Measurements behind kernel choices"). At ``import ember`` Ember raises the mmap threshold
to 32 MiB and the trim threshold to 1 GiB and turns per-allocation mmaps off (``M_MMAP_MAX`` 0; ``mallopt``), so
those blocks stay in the heap and are reused: memory stays at the step's peak instead of going up and down, and the
faults go away. glibc caps the mmap threshold at 32 MiB, and a transformer's largest temporaries are 32 MiB plus
malloc's header ((4096, 2048) and (128, 256, 256) float32), so below the cap they were still mapped and faulted in
again every step; and a step whose memory swings by more than the trim threshold had the top of its heap returned
to the kernel and faulted back each step. The encoder workload (6 x 512, batch 16 x 256) spent 1.2-1.4 s of system
time a step in those faults (of ~17 s CPU on one thread); with these settings none (0.01 s), peak RSS 1,338 ->
1,350 MB (NumPy backend) and 1,952 -> 2,076 MB (torch backend, whose allocator is glibc's too). The cost: the heap
keeps up to 1 GiB of freed memory at its top, and a large array freed below the top stays in the heap for later
allocations instead of going back to the kernel (glibc still maps when the heap cannot grow).

This is process-wide (it also affects the host program) and only on glibc (Linux). Opt out with the
environment variable ``EMBER_MALLOC_TUNING=0`` before importing Ember.

Python's cyclic garbage collector: an Ember graph is Python objects (about five per recorded op: the node,
the result Tensor, the argument tuple, the edge list...), where PyTorch's is C++, so a training step's
allocations trigger collections, and every full collection walks every tracked object of the process:
~42,000 after ``import ember`` (modules, functions, classes), 18-24 ms per full collection on this
project's machine, about 10% of a chain of small ops. At the end of ``import ember``, :func:`freeze_gc`
moves the objects tracked at that moment to the collector's permanent generation (``gc.freeze()``, meant
for long-lived objects), so later collections walk only what was made after. Objects frozen are never
collected as garbage cycles (they are the imported modules' objects, and whatever the host program made
before importing Ember).

It also raises the collector's first threshold from Python's default 700 to ``GC_THRESHOLD0`` (10,000) when the
host program has left it at 700. A young collection walks every tracked object made since the last one that is
still alive, and a training step's graph keeps all of its objects alive until backward: at 700 a chain of 1,000
small ops (~5,000 graph objects) paid ~5% of its time in such walks; at 10,000 a step's objects are freed before
a collection is due. Training steps make no cyclic garbage (measured: none in a transformer, a convnet or the op
chain), so memory is unchanged; garbage cycles of the host program wait up to 10,000 allocations instead of 700.
Opt out of both with ``EMBER_GC_FREEZE=0`` before importing Ember.
"""

from __future__ import annotations

import ctypes
import gc
import os

__all__ = ["freeze_gc", "malloc_tuned"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_MMAP_MAX = -4
MMAP_THRESHOLD = 32 << 20  # the largest glibc accepts on 64-bit
TRIM_THRESHOLD = 1 << 30
MMAP_MAX = 0  # no allocation gets its own mapping (see the module's docstring)

_TUNED = False


def _off(var: str) -> bool:
    return os.environ.get(var, "1").strip().lower() in ("0", "false", "no", "off")


def _tune() -> bool:
    if _off("EMBER_MALLOC_TUNING"):
        return False
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError, AttributeError):
        libc = ""
    if not libc.startswith("glibc"):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    ok = [
        mallopt(opt, value) == 1
        for opt, value in (
            (_M_MMAP_THRESHOLD, MMAP_THRESHOLD),
            (_M_TRIM_THRESHOLD, TRIM_THRESHOLD),
            (_M_MMAP_MAX, MMAP_MAX),
        )
    ]
    return all(ok)


def malloc_tuned() -> bool:
    """True when Ember tuned glibc's malloc at import (see the module's docstring)."""
    return _TUNED


_TUNED = _tune()


GC_THRESHOLD0 = 10_000
_PYTHON_THRESHOLD0 = 700


def freeze_gc() -> bool:
    """Move the objects the garbage collector tracks now to its permanent generation and raise its first
    threshold if it is Python's default (see the module's docstring); called once at the end of ``import ember``.
    False when ``EMBER_GC_FREEZE=0``."""
    if _off("EMBER_GC_FREEZE"):
        return False
    gc.freeze()
    threshold = gc.get_threshold()
    if threshold[0] == _PYTHON_THRESHOLD0:
        gc.set_threshold(GC_THRESHOLD0, *threshold[1:])
    return True
