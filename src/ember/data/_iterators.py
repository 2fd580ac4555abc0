"""The iterator ``iter(DataLoader)`` returns, with PyTorch's class names.

``_SingleProcessDataLoaderIter`` when the loader has no workers, ``_MultiProcessingDataLoaderIter`` when it has
(Ember's workers are threads unless a ``multiprocessing_context`` is given; the class name is PyTorch's either way),
both ``_BaseDataLoaderIter``s: libraries test an iterator's type against them (Lightning). Each wraps the loader's
batch generator: nothing is loaded before the first ``next``; ``len`` is the loader's; it cannot be pickled
(NotImplementedError, as PyTorch's). ``_shutdown_workers()`` stops the workers; the iterator is then exhausted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["_BaseDataLoaderIter", "_MultiProcessingDataLoaderIter", "_SingleProcessDataLoaderIter"]


class _BaseDataLoaderIter:
    """An iterator over a DataLoader's batches (PyTorch's base class of both kinds)."""

    def __init__(self, loader: Any, batches: Iterator[Any]) -> None:
        self._loader = loader
        self._batches = batches
        self._num_yielded = 0

    def __iter__(self) -> _BaseDataLoaderIter:
        return self

    def __next__(self) -> Any:
        batch = next(self._batches)
        self._num_yielded += 1
        return batch

    def __len__(self) -> int:
        return len(self._loader)

    def __getstate__(self) -> Any:
        raise NotImplementedError("{} cannot be pickled", type(self).__name__)  # (PyTorch's arguments, as they are)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """The iterator of a loader without workers."""


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """The iterator of a loader with workers (threads, or processes with a ``multiprocessing_context``)."""

    def _shutdown_workers(self) -> None:
        """Stop the workers now (pending batches are dropped); the iterator is then exhausted."""
        close = getattr(self._batches, "close", None)
        if close is not None:
            close()
