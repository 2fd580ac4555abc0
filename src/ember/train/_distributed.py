"""What the Learner does when it runs in an initialised process group (torchrun, ``multiprocessing.spawn``).

``DistributedRun.start()`` returns None outside a group of two or more ranks, and the Learner runs as in one
process. In a group it: wraps the model in DistributedDataParallel for training (evaluation runs the plain
model), gives the train loader a ``DistributedSampler`` (shuffled like the original loader, same seed) and
the evaluation loaders an unpadded share (so global metrics are exact), combines each epoch's metrics across
ranks (weighted by their sample counts), resumes every rank from the checkpoint rank 0 picks, and lets only
rank 0 print, draw and write logs, plots and checkpoints.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..data.dataloader import DataLoader
from ..data.sampler import DistributedSampler, RandomSampler, Sampler, SequentialSampler
from .metrics import EpochTime, Metric, SamplesPerSecond

__all__ = ["DistributedRun"]


class _Shard(Sampler):
    """Rank ``rank``'s indices ``rank, rank + world, ...`` of ``n``, without padding (for evaluation)."""

    def __init__(self, n: int, rank: int, world: int) -> None:
        self.n, self.rank, self.world = n, rank, world

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.rank, self.n, self.world))

    def __len__(self) -> int:
        return len(range(self.rank, self.n, self.world))


class DistributedRun:
    """The distributed side of one ``Learner.fit`` (see the module docstring)."""

    def __init__(self, rank: int, world: int) -> None:
        self.rank, self.world = rank, world
        self.ddp: Any = None

    @staticmethod
    def start(previous: DistributedRun | None = None) -> DistributedRun | None:
        """The run for this ``fit`` (``previous``, with its DDP wrapper, when the group is the same), or None."""
        from .. import distributed as dist

        if not dist.is_initialized() or dist.get_world_size() < 2:
            return None
        rank, world = dist.get_rank(), dist.get_world_size()
        if previous is not None and (previous.rank, previous.world) == (rank, world):
            return previous
        return DistributedRun(rank, world)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def wrap(self, model: Any) -> Any:
        """The model to train: ``model`` in DistributedDataParallel (made once; built after resuming)."""
        from ..nn.parallel import DistributedDataParallel

        if isinstance(model, DistributedDataParallel):
            self.ddp = model
        elif self.ddp is None or self.ddp.module is not model:
            self.ddp = DistributedDataParallel(model)
        return self.ddp

    def no_sync(self, sync: bool) -> Any:
        """Inside: backward accumulates locally (all but the last micro-batch of a gradient accumulation)."""
        return contextlib.nullcontext() if sync or self.ddp is None else self.ddp.no_sync()

    def shard(self, loader: Any, train: bool) -> Any:
        """``loader`` over this rank's share of its dataset (a new DataLoader; other loaders are kept as given)."""
        if not isinstance(loader, DataLoader) or loader.batch_sampler is None:
            return loader
        sampler = getattr(loader, "sampler", None)
        if isinstance(sampler, (DistributedSampler, _Shard)) or type(sampler) not in (RandomSampler, SequentialSampler):
            return loader
        n = len(loader.dataset)
        if train:
            shuffle = isinstance(sampler, RandomSampler)
            seed = getattr(sampler, "seed", None) or 0
            new: Sampler = DistributedSampler(loader.dataset, self.world, self.rank, shuffle=shuffle, seed=seed)
        else:
            new = _Shard(n, self.rank, self.world)
        return DataLoader(
            loader.dataset,
            batch_size=loader.batch_size,
            sampler=new,
            num_workers=loader.num_workers,
            collate_fn=loader.collate_fn if not loader._default_collate else None,
            drop_last=loader.drop_last,
            prefetch_factor=loader.prefetch_factor,
            persistent_workers=loader.persistent_workers,
            worker_init_fn=loader.worker_init_fn,
            multiprocessing_context=loader.multiprocessing_context,
            timeout=loader.timeout,
            pin_memory=loader.pin_memory,
        )

    def combine(self, metrics: list[Metric]) -> dict[str, float]:
        """Each metric over all ranks: sample-weighted means, summed throughput, the slowest epoch time."""
        from .. import distributed as dist

        mine = [(m.name, m.compute(), getattr(m, "n", None)) for m in metrics]
        every: list[Any] = [None] * self.world
        dist.all_gather_object(every, mine)
        out = {}
        for i, m in enumerate(metrics):
            vals = [r[i][1] for r in every]
            counts = [r[i][2] for r in every]
            if isinstance(m, SamplesPerSecond):
                out[m.name] = float(sum(vals))
            elif isinstance(m, EpochTime):
                out[m.name] = float(max(vals))
            elif all(isinstance(c, int) for c in counts) and sum(counts) > 0:
                out[m.name] = float(sum(v * c for v, c in zip(vals, counts, strict=True)) / sum(counts))
            else:
                out[m.name] = float(sum(vals) / len(vals))
        return out

    def all_finite(self, finite: bool) -> bool:
        """Whether the loss is finite on every rank (so that all ranks skip the same batch)."""
        from .. import distributed as dist
        from .._creation import tensor

        flag = tensor([1.0 if finite else 0.0])
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        return bool(flag.item() == 1.0)

    def load_latest(
        self, checkpointer: Any, model: Any, optimizer: Any, scheduler: Any, device: Any
    ) -> dict[str, Any] | None:
        """Every rank restores the checkpoint rank 0 picks (the newest intact one), or none."""
        from .. import distributed as dist

        chosen: list[Any] = [None]
        info = None
        if self.is_main:
            info = checkpointer.load_latest(model, optimizer, scheduler, device)
            chosen[0] = None if info is None else str(info["path"])
        dist.broadcast_object_list(chosen, src=0)
        if not self.is_main and chosen[0] is not None:
            info = checkpointer.load(chosen[0], model, optimizer, scheduler, device)
        return info
