"""Independent parts of a kernel's work on a few threads (NumPy releases the GIL inside its loops).

Two uses:

- :func:`parallel_rows`, on by default: the elementwise, normalisation and softmax kernels of the NumPy backend
  (GELU, layer norm, attention's softmax, log-softmax) split their rows over :func:`kernel_threads` threads, as
  PyTorch's intra-op threads do. A part is at least ``_MIN_ROWS_PART`` elements (256K): alone on the idle
  2-core machine a two-way split of a chain of ufunc passes paid from about 128-256K elements and lost below
  64K, but inside a GPT step layer norm's (2048, 128) lost when split into two parts of 128K (benchmarks/README.md,
  "Measurements behind kernel choices"). Rows are never split inside, so every reduction
  runs over the same elements in the same order: results do not depend on the thread count.
- :func:`parallel_calls`, on by default: work whose parts are each one long NumPy call (a strided copy), so that
  the GIL passes between the threads once per part, not once per pass: a convolution's im2col columns.
- :func:`parallel`, off by default: the convolution and pooling kernels. On the 2-core machine their splits
  measured slower on 2 threads than on one (LeNet-5's small kernels); ``EMBER_KERNEL_THREADS=N`` turns them on.

``kernel_threads()`` is Ember's thread setting: ``EMBER_KERNEL_THREADS``, else ``ember.set_num_threads``, else
``OMP_NUM_THREADS``, else the CPUs this process may run on (at most 8).

``ember.compile`` records NumPy calls made on its own thread only, so work on pool threads would be lost from a
recording. While a capture runs (``recorder`` is set), a kernel marked :func:`recorded` is recorded as one call
(and a replay runs it again, threads included), and :func:`parallel` runs its parts on the calling thread.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .. import _threads

F = TypeVar("F", bound=Callable[..., Any])

#: elements per part below which a thread costs more than it saves (convolution/pooling splits)
_MIN_PART = 1 << 16
#: elements per part of a row split (see the module docstring)
_MIN_ROWS_PART = 1 << 18
_MAX_THREADS = 8
#: ranges per thread of a row split, taken in turn (see ``_split``)
_CHUNKS = 4
#: ranges per thread of a ``parallel_blocks`` split: fewer, longer NumPy calls on each thread (two Python threads
#: of short calls pass the GIL back and forth). The Winograd transforms' blocks make ~40 NumPy calls each, and with
#: 4 ranges a thread (8 of 64 channels) two threads ran F(4x4, 3x3)'s transforms slower than one; with 2 the
#: conv-stack step went 46 -> 36 ms (benchmarks/README.md, session 11); the product batches, batch norm and ReLU
#: too, 4 -> 2 at 2 threads with the other sessions' processes reniced below it: 35.3 -> 33.9, 36.7 -> 35.5, 36.3
#: -> 35.6 ms median; under load 4.3 the same (49.2 / 49.3)
_BLOCK_CHUNKS = 2
#: work per part of a ``parallel_calls`` split (elements copied): one NumPy call of about 50 us or more on this
#: machine. LeNet-5's first layer at batch 64 (columns of 1.25M elements) is split in two; see ``parallel_calls``
_MIN_CALL_PART = 1 << 17
#: ranges per thread of a ``parallel_calls`` split, taken in turn: a thread that gets its core late takes fewer
_CALL_CHUNKS = 2

#: ``ember.compile``'s ``(fn, args, kwargs) -> result`` while it records (set and reset by its hooks), else None
recorder: Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any] | None = None

_state = threading.local()  # .busy: this thread is running a part (then nested calls run serially)
_lock = threading.Lock()
_pool: _Crew | None = None
_pool_key: tuple[int, int] = (0, 0)  # (pid, workers) of the pool: a forked child, or a new count, makes another


class _Crew:
    """The kernel threads: each sleeps on its own lock until :meth:`submit` hands it a task and releases the lock.
    Leaner than a ``ThreadPoolExecutor`` (no future, work item or queue; the caller's join is one lock): a split of
    4 ranges of 28 us on 2 threads took ~95-115 us against its ~120-155 (serial: ~125-150; benchmarks/README.md,
    session 12)."""

    def __init__(self, workers: int) -> None:
        self._slots = [_Slot() for _ in range(workers)]
        self._next = 0
        for slot in self._slots:
            threading.Thread(target=slot.run, name="ember-kernel", daemon=True).start()

    def submit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the next thread, in turn. A thread still busy, or not yet awake for an earlier task,
        runs the newest task it was handed once free (so a task can be dropped: a split's tasks only take
        ranges the caller has not, and the caller waits for taken ranges only)."""
        slot = self._slots[self._next % len(self._slots)]
        self._next += 1
        slot.task = fn
        slot.wake()

    def shutdown(self, wait: bool = False) -> None:
        """Let the threads end (``wait`` is ignored: a thread ends once it is free)."""
        for slot in self._slots:
            slot.task = None
            slot.wake()


class _Slot:
    """One kernel thread's task and the lock it sleeps on (held while there is nothing to do)."""

    def __init__(self) -> None:
        self.task: Callable[[], None] | None = None
        self.lock = threading.Lock()
        self.lock.acquire()

    def wake(self) -> None:
        try:  # noqa: SIM105 (on every split: a try costs less than contextlib.suppress)
            self.lock.release()
        except RuntimeError:  # already released: the thread has not woken for an earlier task yet
            pass

    def run(self) -> None:
        while True:
            self.lock.acquire()
            task = self.task
            if task is None:  # shut down
                return
            with contextlib.suppress(BaseException):  # (a split's task hands its errors to the caller)
                task()


def _env_count(name: str) -> int | None:
    v = os.environ.get(name, "").strip()
    return max(1, int(v)) if v.isdigit() else None


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def kernel_threads() -> int:
    """How many threads the NumPy kernels use: ``EMBER_KERNEL_THREADS``, else ``ember.set_num_threads``'s
    value, else ``OMP_NUM_THREADS``, else the usable CPUs (at most 8)."""
    n = _env_count("EMBER_KERNEL_THREADS") or _threads._num_threads or _env_count("OMP_NUM_THREADS") or _cpus()
    return min(n, _MAX_THREADS)


def _opt_in_threads() -> int:
    """The threads of :func:`parallel` (convolution and pooling): 1 unless ``EMBER_KERNEL_THREADS`` is set."""
    return min(_env_count("EMBER_KERNEL_THREADS") or 1, _MAX_THREADS)


def _get_pool(workers: int) -> _Crew:
    global _pool, _pool_key
    key = (os.getpid(), workers)
    with _lock:
        if _pool is None or _pool_key != key:
            if _pool is not None and _pool_key[0] == key[0]:
                _pool.shutdown(wait=False)
            _pool = _Crew(workers)
            _pool_key = key
        return _pool


def _split(threads: int, n: int, parts: int, fn: Callable[[int, int], None], chunks: int = 1) -> None:
    """``fn`` over ``range(n)`` on ``parts`` threads (this one included). ``chunks`` > 1: ``parts * chunks``
    ranges taken in turn by whichever thread is free (a pool thread that gets a core late, e.g. beside
    OpenBLAS's spinning threads after a product, takes fewer; the ranges, hence the results, stay the same).
    The call returns when every range is done: it waits for the ranges pool threads took, never for a pool
    thread that has not started yet (it finds none left)."""
    if parts <= 1 or recorder is not None or getattr(_state, "busy", False):
        fn(0, n)
        return
    k = min(n, parts * chunks)
    bounds = [n * i // k for i in range(k + 1)]
    order, finished = itertools.count(), itertools.count(1)  # (next on a count is atomic under the GIL)
    done = threading.Lock()  # released by whichever thread finishes the last range
    done.acquire()
    errors: list[BaseException] = []
    job: list[Callable[[int, int], None] | None] = [fn]  # emptied at the end: a pool thread keeps ``take``

    def take() -> None:
        _state.busy = True
        try:
            while (i := next(order)) < k:
                try:
                    job[0](bounds[i], bounds[i + 1])  # type: ignore[misc]  # (set until every range is done)
                except BaseException as e:  # raised again on the calling thread
                    errors.append(e)
                finally:
                    if next(finished) == k:
                        done.release()
        finally:
            _state.busy = False

    pool = _get_pool(threads - 1)
    for _ in range(1, parts):
        pool.submit(take)
    take()
    done.acquire()
    job[0] = None  # (the arrays ``fn`` holds are not kept alive until the thread's next task)
    if errors:
        err = errors[0]
        errors.clear()
        raise err


def parallel(xp: Any, n: int, size: int, fn: Callable[[int, int], None]) -> None:
    """Call ``fn(lo, hi)`` over a partition of ``range(n)`` (parts must write disjoint results), on up to
    ``EMBER_KERNEL_THREADS`` threads (off unless set) when the work (``size`` elements in all) is large enough
    and ``xp`` is NumPy; the calling thread takes the first part."""
    threads = _opt_in_threads()
    if threads > 1 and getattr(xp, "__name__", "") == "numpy":
        _split(threads, n, min(threads, n, size // _MIN_PART), fn)
    else:
        fn(0, n)


def parallel_blocks(xp: Any, n: int, size: int, fn: Callable[[int, int], None]) -> None:
    """Call ``fn(lo, hi)`` over a partition of ``range(n)`` (parts must write disjoint results) on up to
    :func:`kernel_threads` threads (on by default, as :func:`parallel_rows`) when ``xp`` is NumPy, at least
    ``_MIN_ROWS_PART`` elements a part (``size`` in all), ``_BLOCK_CHUNKS`` ranges per thread taken in turn: the
    Winograd transforms, whose blocks of channels are long contiguous passes."""
    if getattr(xp, "__name__", "") != "numpy" or size < 2 * _MIN_ROWS_PART or n < 2:
        fn(0, n)
        return
    threads = kernel_threads()
    _split(threads, n, min(threads, n, size // _MIN_ROWS_PART), fn, _BLOCK_CHUNKS)


def parallel_calls(n: int, work: int, fn: Callable[[int, int], None]) -> None:
    """Call ``fn(lo, hi)`` over a partition of ``range(n)`` of NumPy arrays, where each part is one long NumPy call
    that releases the GIL (a strided copy; parts must write disjoint results), on up to :func:`kernel_threads`
    threads (on by default), at least ``_MIN_CALL_PART`` of ``work`` a part, ``_CALL_CHUNKS`` ranges per thread
    taken in turn. Two threads of many short calls lose to one (the GIL passes between them around every call);
    of single calls of ~100 us they gain: LeNet-5's training step with its first layer's columns split, in one
    process at load 13-15, 5.06-5.19 -> 4.78-4.90 ms median eager, 4.46-4.65 -> 4.29-4.41 compiled
    (benchmarks/README.md, session 14)."""
    if work < 2 * _MIN_CALL_PART or n < 2:
        fn(0, n)
        return
    threads = kernel_threads()
    _split(threads, n, min(threads, n, work // _MIN_CALL_PART), fn, _CALL_CHUNKS)


def parallel_rows(n: int, size: int, fn: Callable[[int, int], None]) -> None:
    """Call ``fn(lo, hi)`` over a partition of ``n`` rows of NumPy arrays (``size`` elements in all; the parts
    must write disjoint results) on up to :func:`kernel_threads` threads, at least ``_MIN_ROWS_PART`` elements
    a part; the calling thread takes the first part."""
    if size < 2 * _MIN_ROWS_PART or n < 2:
        fn(0, n)
        return
    threads = kernel_threads()
    _split(threads, n, min(threads, n, size // _MIN_ROWS_PART), fn, _CHUNKS)


def recorded(fn: F) -> F:
    """Mark a NumPy kernel function (arrays in, a new array or a tuple of new arrays out, its inputs left
    unchanged) to be recorded by ``ember.compile`` as one call: its work on pool threads is then replayed too."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        rec = recorder
        if rec is None:
            return fn(*args, **kwargs)
        return rec(fn, args, kwargs)

    return wrapper  # type: ignore[return-value]
