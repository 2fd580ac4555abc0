"""Samplers: the order in which a DataLoader visits indices."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

__all__ = ["BatchSampler", "DistributedSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler", "WeightedRandomSampler"]  # fmt: skip


def _rng(generator: Any, seed: int | None = None) -> np.random.Generator:
    """The NumPy generator to draw from: ``generator`` (Ember's or NumPy's), else ``seed``, else Ember's global one."""
    if generator is not None:
        return getattr(generator, "_rng", generator)  # type: ignore[no-any-return]
    if seed is not None:
        return np.random.default_rng(seed)
    from .._creation import default_generator

    return default_generator._rng


class Sampler:
    """An iterable of dataset indices (``__iter__``), with a ``__len__`` where it is known."""

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices ``0 .. len(data_source) - 1`` in order."""

    def __init__(self, data_source: Any) -> None:
        self.n = len(data_source)

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


class RandomSampler(Sampler):
    """A fresh permutation each epoch (or ``num_samples`` draws with replacement).

    With ``seed``, epoch ``e``'s order depends only on ``(seed, e)`` (``set_epoch`` picks ``e``; it counts up
    by itself otherwise), so a resumed run sees the same orders as an uninterrupted one. Otherwise the
    order comes from ``generator`` or Ember's global generator (saved in checkpoints).
    """

    def __init__(self, data_source: Any, replacement: bool = False, num_samples: int | None = None,
                 generator: Any = None, seed: int | None = None) -> None:  # fmt: skip
        self.n, self.replacement = len(data_source), replacement
        self.num_samples = num_samples if num_samples is not None else self.n
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
        if self.replacement:
            return iter(rng.integers(0, self.n, self.num_samples).tolist())
        reps = -(-self.num_samples // max(self.n, 1))
        perm = np.concatenate([rng.permutation(self.n) for _ in range(reps)]) if self.n else np.zeros(0, int)
        return iter(perm[: self.num_samples].tolist())

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order each epoch (drawn from ``generator``)."""

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices, self.generator = list(indices), generator

    def __iter__(self) -> Iterator[int]:
        rng = _rng(self.generator, None)
        return iter([self.indices[i] for i in rng.permutation(len(self.indices))])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
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


class DistributedSampler(Sampler):
    """This rank's share of the (optionally shuffled) indices; ranks never overlap. Call ``set_epoch`` each epoch."""

    def __init__(self, dataset: Any, num_replicas: int = 1, rank: int = 0, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:  # fmt: skip
        if not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: rank {rank} is not in [0, {num_replicas})")
        self.n, self.num_replicas, self.rank = len(dataset), num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        if drop_last:
            self.num_samples = self.n // num_replicas
        else:
            self.num_samples = math.ceil(self.n / num_replicas)
        self.total = self.num_samples * num_replicas

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        idx = np.random.default_rng(self.seed + self.epoch).permutation(self.n) if self.shuffle else np.arange(self.n)
        if self.drop_last:
            idx = idx[: self.total]
        elif self.total > self.n:  # pad by repeating, as PyTorch does
            idx = np.concatenate([idx, idx[: self.total - self.n]])
        return iter(idx[self.rank : self.total : self.num_replicas].tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
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
