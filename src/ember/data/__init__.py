"""Data loading: datasets, samplers, the DataLoader, transforms and ready datasets (MNIST, CIFAR, SVHN, image
folders, text corpora)."""

from . import transforms
from ._cifar import CIFAR10, CIFAR100, SVHN
from ._folder import IMG_EXTENSIONS, DatasetFolder, ImageFolder, default_loader, pil_loader
from ._text import TextCorpus, Vocab
from .dataloader import DataLoader, default_collate, default_convert
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    InMemoryDataset,
    IterableDataset,
    MapDataset,
    ShuffledDataset,
    StackDataset,
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
    "CIFAR10", "CIFAR100", "IMG_EXTENSIONS", "SVHN", "DatasetFolder", "ImageFolder", "TextCorpus", "Vocab",
    "default_loader", "pil_loader", "MNIST", "BatchSampler", "CSVDataset", "ChainDataset", "ConcatDataset",
    "DataLoader", "Dataset", "DistributedSampler", "FashionMNIST", "InMemoryDataset", "IterableDataset",
    "MapDataset", "NpzDataset", "RandomSampler", "Sampler", "SequentialSampler", "ShuffledDataset", "StackDataset",
    "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "default_collate", "default_convert",
    "digits", "get_worker_info", "random_split", "read_idx", "transforms",
]  # fmt: skip
