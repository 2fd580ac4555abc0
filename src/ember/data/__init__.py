"""Data loading: datasets, samplers, the DataLoader, transforms and ready datasets."""

from . import transforms
from .dataloader import DataLoader, default_collate
from .dataset import (
    ConcatDataset,
    Dataset,
    InMemoryDataset,
    IterableDataset,
    MapDataset,
    ShuffledDataset,
    Subset,
    TensorDataset,
    get_worker_info,
    random_split,
)
from .datasets import MNIST, CSVDataset, FashionMNIST, NpzDataset, digits, read_idx
from .sampler import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "MNIST", "BatchSampler", "CSVDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "FashionMNIST", "InMemoryDataset", "IterableDataset", "MapDataset", "NpzDataset", "RandomSampler", "Sampler",
    "SequentialSampler", "ShuffledDataset", "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
    "default_collate", "digits", "get_worker_info", "random_split", "read_idx", "transforms",
]  # fmt: skip
