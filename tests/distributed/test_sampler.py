"""DistributedSampler gives PyTorch's indices for the same arguments (no process group needed)."""

from __future__ import annotations

import pytest
from ember.utils.data.distributed import DistributedSampler as FromTorchPath

from ember.data import DataLoader, DistributedSampler, TensorDataset
from ember.data.sampler import torch_randperm

pytestmark = pytest.mark.distributed


@pytest.mark.parametrize("n", [0, 1, 2, 7, 10, 33, 100])
def test_indices_equal_pytorch(torch, n):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    data = list(range(n))
    for world in (1, 2, 3, 4):
        for shuffle in (False, True):
            for drop_last in (False, True):
                for seed, epoch in ((0, 0), (3, 2), (2**32 + 1, 1)):
                    for rank in range(world):
                        kw = {
                            "num_replicas": world,
                            "rank": rank,
                            "shuffle": shuffle,
                            "drop_last": drop_last,
                            "seed": seed,
                        }
                        if n == 0 and not drop_last:
                            continue  # PyTorch divides by zero padding an empty list
                        ours, theirs = DistributedSampler(data, **kw), TorchSampler(data, **kw)
                        ours.set_epoch(epoch)
                        theirs.set_epoch(epoch)
                        assert list(ours) == list(theirs), (world, rank, shuffle, drop_last, seed, epoch)
                        assert len(ours) == len(theirs)


def test_randperm_equals_torch_for_large_n(torch):
    g = torch.Generator()
    g.manual_seed(12345)
    assert torch_randperm(50_000, 12345) == torch.randperm(50_000, generator=g).tolist()


def test_shards_partition_the_data_and_epochs_reshuffle():
    shards = [list(DistributedSampler(range(10), num_replicas=2, rank=r, seed=1)) for r in range(2)]
    assert sorted(shards[0] + shards[1]) == list(range(10))
    s = DistributedSampler(range(10), num_replicas=2, rank=0, seed=1)
    first = list(s)
    s.set_epoch(1)
    assert list(s) != first and FromTorchPath is DistributedSampler
    # the loader passes the epoch on (the Learner calls loader.set_epoch)
    loader = DataLoader(TensorDataset(list(range(10))), batch_size=5, sampler=s)
    loader.set_epoch(0)
    assert [v for b in loader for v in b[0].tolist()] == first


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"invalid rank 2, rank should be in \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="num_replicas must be a positive integer"):
        DistributedSampler(range(4), num_replicas=0, rank=0)
    with pytest.raises(ValueError, match="none is initialised"):
        DistributedSampler(range(4))
