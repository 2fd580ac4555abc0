"""Datasets: the map-style protocol (``__len__``/``__getitem__``), iterable datasets, and their combinators."""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from .._creation import from_numpy
from .._tensor import Tensor
from .sampler import _rng

__all__ = [
    "ChainDataset", "ConcatDataset", "Dataset", "InMemoryDataset", "IterableDataset", "MapDataset", "ShuffledDataset",
    "StackDataset", "Subset", "TensorDataset", "get_worker_info", "random_split",
]  # fmt: skip


T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: ``len(ds)`` samples, ``ds[i]`` for ``0 <= i < len(ds)``.

    A dataset may also define ``get_batch(indices)`` returning a whole collated batch at once; the
    DataLoader then skips per-sample work (in-memory arrays use this).
    """

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Generic[T_co]):
    """A stream of samples (``__iter__``), possibly larger than memory.

    Inside DataLoader workers, ``get_worker_info()`` gives ``(id, num_workers)`` so the stream can be
    sharded without duplicates (see ``shard``).
    """

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    @staticmethod
    def shard(it: Iterator[Any]) -> Iterator[Any]:
        """Keep every ``num_workers``-th item starting at this worker's id (all items outside workers)."""
        info = get_worker_info()
        if info is None:
            yield from it
            return
        for i, x in enumerate(it):
            if i % info.num_workers == info.id:
                yield x


class WorkerInfo:
    __slots__ = ("id", "num_workers", "seed")

    def __init__(self, id: int, num_workers: int, seed: int) -> None:
        self.id, self.num_workers, self.seed = id, num_workers, seed


#: this thread's (or worker process's) WorkerInfo, set by the DataLoader's workers
_worker_local = threading.local()


def get_worker_info() -> WorkerInfo | None:
    """This worker's id and the number of workers, or None outside DataLoader workers."""
    return getattr(_worker_local, "info", None)


def _as_array(x: Any) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


class TensorDataset(Dataset):
    """Samples are the ``i``-th rows of equally long tensors/arrays; batches are sliced in one go.

    The rows are sliced on the host; a tensor given on another device or backend (cuda) gets its samples and
    batches back there, as PyTorch's do (arrays give CPU tensors, as ``from_numpy``).
    """

    def __init__(self, *tensors: Any) -> None:
        if not tensors:
            raise ValueError("TensorDataset: give at least one tensor")
        self.arrays = [_as_array(t) for t in tensors]
        self._devices = [t.device if isinstance(t, Tensor) else None for t in tensors]
        #: bfloat16 tensors' rows are held as float32 (exact; NumPy has no bfloat16 of its own): their dtype again
        self._bf16 = [isinstance(t, Tensor) and t.dtype.name == "bfloat16" for t in tensors]
        n = len(self.arrays[0])
        for i, a in enumerate(self.arrays):
            if len(a) != n:
                raise ValueError(f"TensorDataset: tensor {i} has {len(a)} rows, tensor 0 has {n}")

    def __len__(self) -> int:
        return len(self.arrays[0])

    def _placed(self, arrays: Any) -> tuple[Tensor, ...]:
        out = []
        bf16 = getattr(self, "_bf16", None) or [False] * len(self.arrays)
        for a, dev, b in zip(arrays, getattr(self, "_devices", None) or [None] * len(self.arrays), bf16, strict=True):
            t = from_numpy(a)
            if dev is not None and (t.device != dev or t.device.backend != dev.backend):
                t = t.to(dev)
            out.append(t.bfloat16() if b else t)
        return tuple(out)

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        """The data as tensors sharing memory with the dataset (PyTorch's attribute; copies off the host)."""
        return self._placed(self.arrays)

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        """The ``index``-th rows as tensors sharing memory with the data (as PyTorch returns them)."""
        return self._placed([np.asarray(a[index]) for a in self.arrays])

    def get_batch(self, indices: Sequence[int]) -> tuple[Tensor, ...]:
        idx = np.asarray(indices)
        return self._placed([np.take(a, idx, axis=0) for a in self.arrays])  # one gather, no second copy


class InMemoryDataset(Dataset):
    """A list of samples held in memory (any structure the collate function understands)."""

    def __init__(self, items: Sequence[Any]) -> None:
        self.items = list(items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Any:
        return self.items[index]


class MapDataset(Dataset):
    """``transform(dataset[i])``: a lazily transformed view."""

    def __init__(self, dataset: Any, transform: Callable[[Any], Any]) -> None:
        self.dataset, self.transform = dataset, transform

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Any:
        return self.transform(self.dataset[index])


class Subset(Dataset[T_co]):
    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, list(indices)
        n = len(dataset)
        bad = [i for i in self.indices if not -n <= i < n]
        if bad:
            raise IndexError(f"Subset: indices {bad[:5]} are out of range for a dataset of {n}")

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def get_batch(self, indices: Sequence[int]) -> Any:
        inner = getattr(self.dataset, "get_batch", None)
        if inner is None:
            raise AttributeError("get_batch")
        return inner([self.indices[i] for i in indices])


class ShuffledDataset(Subset):
    """A fixed, seeded permutation of ``dataset``."""

    def __init__(self, dataset: Any, seed: int = 0) -> None:
        super().__init__(dataset, np.random.default_rng(seed).permutation(len(dataset)).tolist())


class ConcatDataset(Dataset[T_co]):
    def __init__(self, datasets: Sequence[Any]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: give at least one dataset")
        self.cumulative = list(np.cumsum([len(d) for d in self.datasets]))

    @property
    def cumulative_sizes(self) -> list[int]:
        """The running totals of the datasets' lengths (PyTorch's name)."""
        return [int(c) for c in self.cumulative]

    def __len__(self) -> int:
        return int(self.cumulative[-1])

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"ConcatDataset: index {index} is out of range for {len(self)} samples")
        d = bisect.bisect_right(self.cumulative, index)
        start = self.cumulative[d - 1] if d else 0
        return self.datasets[d][index - start]


def random_split(dataset: Any, lengths: Sequence[float], generator: Any = None, seed: int | None = None
                 ) -> list[Subset]:  # fmt: skip
    """Split into non-overlapping subsets of the given lengths (or fractions summing to 1), seeded."""
    n = len(dataset)
    if all(0 <= f <= 1 for f in lengths) and math.isclose(sum(lengths), 1.0) and sum(lengths) != n:
        sizes = [math.floor(n * f) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
    else:
        sizes = [int(v) for v in lengths]
    if sum(sizes) != n:
        raise ValueError(f"random_split: lengths {list(lengths)} do not add up to the dataset size {n}")

    perm = _rng(generator, seed).permutation(n)
    out: list[Subset[Any]] = []
    start = 0
    for s in sizes:
        out.append(Subset(dataset, perm[start : start + s].tolist()))
        start += s
    return out


class StackDataset(Dataset):
    """Datasets of one length side by side: ``StackDataset(a, b)[i]`` is ``(a[i], b[i])``, ``StackDataset(x=a,
    y=b)[i]`` is ``{"x": a[i], "y": b[i]}``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            raise ValueError("StackDataset: give the datasets either by position (tuples) or by name (dicts), not both")
        parts = list(args) or list(kwargs.values())
        if not parts:
            raise ValueError("StackDataset: give at least one dataset")
        lengths = [len(d) for d in parts]
        if len(set(lengths)) != 1:
            raise ValueError(f"StackDataset: the datasets' lengths differ: {lengths}")
        self.datasets: Any = args if args else dict(kwargs)
        self._length = lengths[0]

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: int) -> Any:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets: Sequence[Any]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only chains IterableDatasets, got {type(d).__name__}")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)
