"""Samplers: the order in which a DataLoader visits indices."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from .._creation import default_generator

__all__ = ["BatchSampler", "DistributedSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler", "WeightedRandomSampler"]  # fmt: skip


def _rng(generator: Any, seed: int | None = None) -> np.random.Generator:
    """The NumPy generator to draw from: ``generator`` (Ember's or NumPy's), else ``seed``, else Ember's global one."""
    if generator is not None:
        return getattr(generator, "_rng", generator)  # type: ignore[no-any-return]
    if seed is not None:
        return np.random.default_rng(seed)

    return default_generator._rng


_T_co = TypeVar("_T_co", covariant=True)


class Sampler(Generic[_T_co]):
    """An iterable of dataset indices (``__iter__``), with a ``__len__`` where it is known."""

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """Indices ``0 .. len(data_source) - 1`` in order."""

    def __init__(self, data_source: Any) -> None:
        self.n = len(data_source)

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


class RandomSampler(Sampler[int]):
    """A fresh permutation each epoch (or ``num_samples`` draws with replacement).

    With ``seed``, epoch ``e``'s order depends only on ``(seed, e)`` (``set_epoch`` picks ``e``; it counts up
    by itself otherwise), so a resumed run sees the same orders as an uninterrupted one. Otherwise the
    order comes from ``generator`` or Ember's global generator (saved in checkpoints).
    """

    def __init__(self, data_source: Any, replacement: bool = False, num_samples: int | None = None,
                 generator: Any = None, seed: int | None = None) -> None:  # fmt: skip
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement should be a boolean value, but got replacement={replacement}")
        self.n, self.replacement = len(data_source), replacement
        self.num_samples = num_samples if num_samples is not None else self.n
        if isinstance(self.num_samples, bool) or not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"RandomSampler: num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")  # fmt: skip
        self.generator, self.seed = generator, seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        if self.seed is not None and self.generator is None:
            rng = np.random.default_rng((self.seed, self.epoch))
            self.epoch += 1
        else:
            rng = _rng(self.generator, None)
        return self._draws(rng)

    def _draws(self, rng: np.random.Generator) -> Iterator[int]:
        """The indices, drawn lazily: ``num_samples`` may be far larger than memory (``10**10`` draws)."""
        left = self.num_samples
        while left > 0:
            if self.replacement:
                chunk = rng.integers(0, self.n, min(left, _CHUNK))
            else:
                chunk = rng.permutation(self.n)[:left] if self.n else np.zeros(0, np.int64)
                if not len(chunk):
                    return
            left -= len(chunk)
            yield from chunk.tolist()

    def __len__(self) -> int:
        return self.num_samples


_CHUNK = 1 << 16  # indices drawn at a time with replacement


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in a random order each epoch (drawn from ``generator``)."""

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices, self.generator = list(indices), generator

    def __iter__(self) -> Iterator[int]:
        rng = _rng(self.generator, None)
        return iter([self.indices[i] for i in rng.permutation(len(self.indices))])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices drawn with probability proportional to ``weights``."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:  # fmt: skip
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1 or (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise ValueError("WeightedRandomSampler: weights must be a 1-d sequence of non-negative finite numbers")
        if not replacement and num_samples > (w > 0).sum():
            raise ValueError(f"WeightedRandomSampler: cannot draw {num_samples} samples without replacement "
                             f"from {(w > 0).sum()} with non-zero weight")  # fmt: skip
        self.p, self.num_samples, self.replacement, self.generator = w / w.sum(), num_samples, replacement, generator

    def __iter__(self) -> Iterator[int]:
        rng = _rng(self.generator, None)
        return iter(rng.choice(len(self.p), self.num_samples, replace=self.replacement, p=self.p).tolist())

    def __len__(self) -> int:
        return self.num_samples


def torch_randperm(n: int, seed: int) -> list[int]:
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed))`` without torch: the same indices.

    torch's CPU generator is MT19937 seeded as ``init_genrand(seed mod 2**32)`` (NumPy's legacy seeding), and
    its ``randperm`` swaps ``r[i]`` with ``r[i + u32 % (n - i)]`` for each of ``n - 1`` 32-bit draws.
    """
    if n >= 2**32 // 20:  # torch switches to 64-bit draws there
        raise ValueError(f"torch_randperm: n={n} is beyond the 32-bit draws this reproduces (< {2**32 // 20})")
    if n < 2:
        return list(range(n))
    draws = np.random.RandomState(seed & 0xFFFFFFFF).randint(0, 2**32, size=n - 1, dtype=np.uint32)
    offsets = (draws.astype(np.int64) % np.arange(n, 1, -1, dtype=np.int64)).tolist()
    r = list(range(n))
    for i, z in enumerate(offsets):
        j = i + z
        r[i], r[j] = r[j], r[i]
    return r


class DistributedSampler(Sampler[_T_co]):
    """This rank's share of the (optionally shuffled) indices; ranks never overlap. Call ``set_epoch`` each epoch.

    PyTorch's sampler index for index: epoch ``e`` shuffles with torch's ``randperm`` seeded ``seed + e``
    (reproduced without torch), the list is padded by repeating its start to a multiple of ``num_replicas``
    (or cut to one with ``drop_last``), and rank ``r`` takes every ``num_replicas``-th index from ``r``.
    ``num_replicas`` and ``rank`` default to the initialised process group's.
    """

    def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:  # fmt: skip
        if num_replicas is None or rank is None:
            from .. import distributed as dist

            if not dist.is_initialized():
                raise ValueError(
                    "DistributedSampler: num_replicas and rank default to the process group's, but none is "
                    "initialised; call ember.distributed.init_process_group() or pass both"
                )
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be a positive integer, got {num_replicas!r}")
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: invalid rank {rank}, rank should be in [0, {num_replicas - 1}]")
        self.dataset, self.n, self.num_replicas, self.rank = dataset, len(dataset), num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        if drop_last and self.n % num_replicas:
            self.num_samples = math.ceil((self.n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(self.n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Shuffle differently (and the same on every rank) in each epoch."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        idx = torch_randperm(self.n, self.seed + self.epoch) if self.shuffle else list(range(self.n))
        if not self.drop_last:
            pad = self.total_size - len(idx)
            if pad <= len(idx):
                idx += idx[:pad]
            else:
                idx += (idx * math.ceil(pad / len(idx)))[:pad]
        else:
            idx = idx[: self.total_size]
        return iter(idx[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Group a sampler's indices into lists of ``batch_size``."""

    def __init__(self, sampler: Any, batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size must be a positive integer, got {batch_size!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:  # type: ignore[override]
        batch: list[int] = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
