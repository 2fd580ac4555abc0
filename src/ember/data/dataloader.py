"""``DataLoader``: batches from a dataset, with shuffling, collation and prefetching workers.

Workers are threads by default: NumPy releases the GIL in its kernels, datasets need not be picklable,
and errors surface in the main thread with the index of the sample that raised. With
``multiprocessing_context`` ("fork", "spawn", "forkserver" or a context) they are processes, for
datasets whose ``__getitem__`` holds the GIL (see ``_workers.py``). Map-style datasets that define
``get_batch(indices)`` (TensorDataset, Subset of one) are batched in one vectorized call.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import queue
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from .. import accelerator
from .._creation import from_numpy
from .._tensor import Tensor
from ._iterators import _BaseDataLoaderIter, _MultiProcessingDataLoaderIter, _SingleProcessDataLoaderIter
from ._threads import ThreadWorkers
from ._workers import ProcessPool, fetch, stream_batches
from .dataset import IterableDataset, WorkerInfo, _worker_local
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert"]
_ITERATORS = (_BaseDataLoaderIter, _MultiProcessingDataLoaderIter, _SingleProcessDataLoaderIter)  # PyTorch's names


def default_collate(batch: Sequence[Any]) -> Any:
    """Stack a list of samples: arrays/tensors/numbers become one Tensor; tuples, lists and dicts recurse."""
    first = batch[0]
    if isinstance(first, (Tensor, np.ndarray, np.generic)):
        be: Any = getattr(first, "_backend", None)  # tensors of one backend: stacked there, not through NumPy
        kind = first.__class__
        one = be is not None and all(b.__class__ is kind and getattr(b, "_backend", None) is be for b in batch)
        arrays = [b._data if one else b.detach().cpu().numpy() if isinstance(b, Tensor) else np.asarray(b)
                  for b in batch]  # fmt: skip
        shape = arrays[0].shape
        for i, a in enumerate(arrays):
            if a.shape != shape:
                raise ValueError(f"default_collate: sample {i} has shape {tuple(a.shape)} but sample 0 has "
                                 f"{tuple(shape)}")  # fmt: skip
        if one:
            return Tensor._make(be.xp.stack(arrays), be)
        out = Tensor(np.stack(arrays))  # (a bfloat16 sample's values come as float32, exactly: its dtype again)
        return out.to(device=first.device, dtype=first.dtype) if isinstance(first, Tensor) else out
    if isinstance(first, bool):
        return Tensor(np.array(batch, dtype=bool))
    if isinstance(first, int):
        return Tensor(np.array(batch, dtype=np.int64))
    if isinstance(first, float):  # float64, as PyTorch's (a Python float is a double)
        return Tensor(np.array(batch, dtype=np.float64))
    if isinstance(first, (str, bytes)):  # the strings as they come (a tuple inside a tuple sample), as PyTorch
        return batch if isinstance(batch, (list, tuple)) else list(batch)
    if isinstance(first, Mapping):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(default_collate(s) for s in zip(*batch, strict=True)))
    if isinstance(first, (tuple, list)):
        n = len(first)
        for i, b in enumerate(batch):
            if len(b) != n:
                raise ValueError(f"default_collate: sample {i} has {len(b)} fields but sample 0 has {n}")
        return [default_collate(s) for s in zip(*batch, strict=True)]  # a list for tuples too, as PyTorch
    raise TypeError(f"default_collate: cannot batch samples of type {type(first).__name__}")


def default_convert(data: Any) -> Any:
    """What ``DataLoader`` does to each sample when it does not batch (``batch_size=None``): NumPy arrays and
    scalars become tensors (sharing memory), mappings and sequences recurse (tuples become lists), as PyTorch's."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "SUO":
        return from_numpy(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return Tensor(np.asarray(data))
    if isinstance(data, Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (tuple, list)):
        return [default_convert(d) for d in data]
    return data


_T_co = TypeVar("_T_co", covariant=True)


class DataLoader(Generic[_T_co]):
    """Iterate over ``dataset`` in batches (PyTorch's arguments).

    ``shuffle`` draws a new permutation each epoch from ``generator`` (or ``seed``, or Ember's global
    generator); ``num_workers > 0`` loads batches in threads, ``prefetch_factor`` batches per worker ahead,
    or in processes started with ``multiprocessing_context`` (the dataset and ``collate_fn`` must
    pickle for "spawn"; an IterableDataset is streamed, each worker iterating its own share).
    ``timeout`` (seconds, 0 = none) bounds the wait for any worker's batch (thread or process): past it
    the loader raises RuntimeError and abandons its workers. ``pin_memory=True`` puts every
    tensor of a batch in page-locked memory (``Tensor.pin_memory``) for ``non_blocking`` copies to the
    accelerator; without one it warns once and does nothing (as PyTorch does). The positional order is
    PyTorch's; ``in_order=False`` is accepted and batches still come in order (which PyTorch allows).
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = False, sampler: Any = None,
                 batch_sampler: Any = None, num_workers: int = 0, collate_fn: Callable[[list[Any]], Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], Any] | None = None, multiprocessing_context: Any = None,
                 generator: Any = None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True, seed: int | None = None) -> None:  # fmt: skip
        if num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be >= 0, got {num_workers}")
        if batch_size is not None and (type(batch_size) is bool or not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"DataLoader: batch_size must be a positive integer (or None for unbatched samples), "
                             f"got {batch_size!r}")  # fmt: skip
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(f"DataLoader: prefetch_factor={prefetch_factor} needs workers (num_workers > 0); "
                             "leave it None without workers")  # fmt: skip
        if prefetch_factor is not None and (type(prefetch_factor) is bool or not isinstance(prefetch_factor, int)
                                            or prefetch_factor < 1):  # fmt: skip
            raise ValueError(f"DataLoader: prefetch_factor (batches loaded ahead by each worker) must be a positive "
                             f"integer, got {prefetch_factor!r}")  # fmt: skip
        if not timeout >= 0:
            raise ValueError(f"DataLoader: timeout must be >= 0 seconds (0 waits forever), got {timeout!r}")
        self.dataset, self.num_workers = dataset, num_workers
        self.prefetch_factor = prefetch_factor if prefetch_factor is not None else (2 if num_workers else None)
        if batch_size is None:  # unbatched: the collate function (default_convert) gets each sample alone
            self.collate_fn: Callable[[list[Any]], Any] = _OneSample(collate_fn or default_convert)
            self._default_collate = False
        else:
            self.collate_fn = collate_fn or default_collate
            self._default_collate = collate_fn is None
        self.persistent_workers, self.worker_init_fn = persistent_workers, worker_init_fn
        self.in_order = in_order  # False lets PyTorch's workers hand batches out of order; Ember's keep the order
        self.generator, self.pin_memory_device = generator, pin_memory_device
        self.batch_size, self.drop_last = batch_size, drop_last
        self._iterable = isinstance(dataset, IterableDataset)
        self._pool: ThreadWorkers | None = None
        self.multiprocessing_context, self.timeout, self.pin_memory = multiprocessing_context, timeout, pin_memory
        self._pin = pin_memory and _can_pin()
        if pin_memory and not self._pin:
            warnings.warn(
                "DataLoader: pin_memory=True but no accelerator is found here; batches are not pinned",
                UserWarning,
                stacklevel=2,
            )
        self._procs: Any = None
        if self._iterable:
            if shuffle or sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader: an IterableDataset cannot be shuffled or sampled; shuffle the stream")
            self.batch_sampler = None
            return
        if batch_sampler is not None:
            if batch_size not in (None, 1) or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler excludes batch_size, shuffle, sampler and drop_last")
            self.batch_sampler = batch_sampler
            return
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: give shuffle or a sampler, not both")
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator, seed=seed) if shuffle else SequentialSampler(dataset)
        self.sampler = sampler
        self.batch_sampler = BatchSampler(sampler, batch_size or 1, drop_last) if batch_size is not None else None

    def set_epoch(self, epoch: int) -> None:
        """Tell the sampler which epoch starts (seeded shuffles and DistributedSampler depend on it)."""
        sampler = getattr(self.batch_sampler, "sampler", None) or getattr(self, "sampler", None)
        if sampler is not None and hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)

    def __len__(self) -> int:
        if self.batch_sampler is None:
            raise TypeError("DataLoader: the length of an IterableDataset loader is unknown")
        return len(self.batch_sampler)

    # -- fetching -------------------------------------------------------------------------------------
    def _fetch(self, indices: list[int]) -> Any:
        return fetch(self.dataset, self.collate_fn, self._default_collate, indices)

    def _executor(self) -> ThreadWorkers:
        if self._pool is None:

            def init(wid: int) -> None:
                _worker_local.info = WorkerInfo(wid, self.num_workers, wid)
                if self.worker_init_fn is not None:
                    self.worker_init_fn(wid)

            self._pool = ThreadWorkers(self.num_workers, init)
        return self._pool

    def _timed_out(self, what: str) -> RuntimeError:
        return RuntimeError(f"DataLoader timed out after {self.timeout} seconds: no batch from the worker {what} "
                            "(timeout=...); a __getitem__ may be stuck")  # fmt: skip

    def _close(self, abandon: bool = False) -> None:
        """Stop the workers (unless persistent); ``abandon``: a worker is stuck, do not wait for it."""
        if self._pool is not None and (abandon or not self.persistent_workers):
            self._pool.shutdown(wait=not abandon)
            self._pool = None
        if self._procs is not None and (not self.persistent_workers or self._procs.broken):
            self._procs.close()
            self._procs = None

    def _iter_processes(self, batches: Iterator[Any] | None) -> Iterator[Any]:
        if self._procs is None:
            self._procs = ProcessPool(self, self.multiprocessing_context)
        try:
            if batches is None:  # an IterableDataset
                yield from self._procs.stream(self.batch_size, self.drop_last)
                return
            yield from self._procs.run(list(b) for b in batches)
        finally:
            self._close()

    def __iter__(self) -> _BaseDataLoaderIter:
        kind = _SingleProcessDataLoaderIter if self.num_workers == 0 else _MultiProcessingDataLoaderIter
        return kind(self, self._all_batches())

    def _all_batches(self) -> Iterator[Any]:
        if not self._pin:
            yield from self._batches()
            return
        for b in self._batches():
            yield _pin_batch(b)

    def _batches(self) -> Iterator[Any]:
        if self._iterable:
            yield from self._iter_stream()
            return
        assert self.batch_sampler is not None or self.sampler is not None
        batches: Iterator[Any] = (
            iter(self.batch_sampler) if self.batch_sampler is not None else ([i] for i in self.sampler)
        )
        if self.num_workers == 0:
            for b in batches:
                yield self._fetch(list(b))
            return
        if self.multiprocessing_context is not None:
            yield from self._iter_processes(batches)
            return
        pool = self._executor()
        pending: collections.deque[Any] = collections.deque()
        limit = self.num_workers * (self.prefetch_factor or 2)
        stuck = False

        def result() -> Any:
            nonlocal stuck
            try:
                return pending.popleft().result(timeout=self.timeout or None)
            except concurrent.futures.TimeoutError:
                stuck = True
                raise self._timed_out("threads") from None

        try:
            for b in batches:
                pending.append(pool.submit(self._fetch, list(b)))
                if len(pending) >= limit:
                    yield result()
            while pending:
                yield result()
        finally:
            for f in pending:
                f.cancel()
            self._close(abandon=stuck)

    def _iter_stream(self) -> Iterator[Any]:
        def batches(it: Iterator[Any]) -> Iterator[Any]:
            return stream_batches(it, self.batch_size, self.drop_last, self.collate_fn)

        if self.num_workers == 0:
            yield from batches(iter(self.dataset))
            return
        if self.multiprocessing_context is not None:
            yield from self._iter_processes(None)
            return
        # each worker iterates its own shard; batches are interleaved round-robin
        q: queue.Queue[Any] = queue.Queue(maxsize=self.num_workers * (self.prefetch_factor or 2))
        done = object()

        def run(wid: int) -> None:
            _worker_local.info = WorkerInfo(wid, self.num_workers, wid)
            try:
                if self.worker_init_fn is not None:
                    self.worker_init_fn(wid)
                for b in batches(iter(self.dataset)):
                    q.put((wid, b, None))
            except Exception as e:  # surfaced in the main thread
                q.put((wid, None, e))
            q.put((wid, done, None))

        threads = [threading.Thread(target=run, args=(w,), daemon=True) for w in range(self.num_workers)]
        for t in threads:
            t.start()
        live = self.num_workers
        while live:
            try:
                wid, b, err = q.get(timeout=self.timeout or None)
            except queue.Empty:
                raise self._timed_out("threads") from None
            if err is not None:
                raise RuntimeError(f"DataLoader: worker {wid} raised {type(err).__name__}: {err}") from err
            if b is done:
                live -= 1
                continue
            yield b

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False)
        procs = getattr(self, "_procs", None)
        if procs is not None:
            with contextlib.suppress(Exception):  # at interpreter exit modules may already be gone
                procs.close()


def _can_pin() -> bool:
    """True when page-locked memory can help: an accelerator is usable here."""
    return accelerator.is_available()


def _pin_batch(x: Any) -> Any:
    """``x`` with every CPU tensor in it (through tuples, lists, dicts) in pinned memory."""
    if isinstance(x, Tensor):
        return x.pin_memory() if x.is_cpu else x
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_pin_batch(v) for v in x))
    if isinstance(x, (tuple, list)):
        return type(x)(_pin_batch(v) for v in x)
    if isinstance(x, Mapping):
        return {k: _pin_batch(v) for k, v in x.items()}
    return x


class _OneSample:
    """``batch_size=None``: ``fn`` applied to the one sample each fetch loads (PyTorch's unbatched mode, whose
    default is ``default_convert``); a class, so that process workers can pickle it."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, samples: list[Any]) -> Any:
        return self.fn(samples[0])
