"""CIFAR-10/100 from their binary release and SVHN from its ``.mat`` files.

Samples are ``(image, target)``: ``image`` a (3, 32, 32) uint8 Tensor (``ConvertImageDtype(ember.float32)``
or ``ToTensor()`` makes floats in [0, 1]) and ``target`` an int64 class index. With no ``transform`` whole
batches are sliced at once (the DataLoader's fast path).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ._download import download_url, extract_archive
from .dataset import TensorDataset

__all__ = ["CIFAR10", "CIFAR100", "SVHN"]


class _ImageArrays(TensorDataset):
    """uint8 (N, 3, H, W) images and int64 labels, with torchvision's ``transform``/``target_transform``."""

    classes: ClassVar[list[str]] = []

    def __init__(self, images: np.ndarray, labels: np.ndarray, transform: Any, target_transform: Any) -> None:
        super().__init__(images, labels.astype(np.int64))
        self.transform, self.target_transform = transform, target_transform

    @property
    def data(self) -> np.ndarray:
        """All images, (N, 3, H, W) uint8."""
        return self.arrays[0]

    @property
    def targets(self) -> list[int]:
        return self.arrays[1].tolist()  # type: ignore[no-any-return]

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        img, target = super().__getitem__(index)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def get_batch(self, indices: Any) -> Any:
        if self.transform is not None or self.target_transform is not None:
            raise AttributeError("get_batch")  # per-sample transforms: the loader falls back to __getitem__
        return super().get_batch(indices)


def _read_records(path: Path, label_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """A CIFAR binary file: records of ``label_bytes`` label bytes then 3072 pixel bytes (R, G, B planes)."""
    record = label_bytes + 3 * 32 * 32
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size == 0 or raw.size % record:
        raise ValueError(f"{path}: {raw.size} bytes is not a whole number of {record}-byte CIFAR records "
                         f"({label_bytes} label byte(s) + 3072 pixels); the file is truncated or not "
                         f"this data set's binary version")  # fmt: skip
    rows = raw.reshape(-1, record)
    return rows[:, label_bytes:].reshape(-1, 3, 32, 32), rows[:, :label_bytes]


class CIFAR10(_ImageArrays):
    """CIFAR-10 from the binary release (``cifar-10-batches-bin/`` in ``root``; ``download=True`` fetches it).

    ``data_batch_1.bin`` ... ``data_batch_5.bin`` make the 50,000 training images, ``test_batch.bin`` the
    10,000 test images; each record is one label byte and 3072 pixel bytes. The pickled Python release is
    never read (unpickling can run code).
    """

    url = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
    md5: ClassVar[str | None] = "c32a1d4ab5d03f1284b67883e8d87530"
    folder = "cifar-10-batches-bin"
    train_files: ClassVar[list[str]] = [f"data_batch_{i}.bin" for i in range(1, 6)]
    test_files: ClassVar[list[str]] = ["test_batch.bin"]
    classes: ClassVar[list[str]] = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
                                    "truck"]  # fmt: skip

    def __init__(self, root: str | Path, train: bool = True, transform: Any = None, target_transform: Any = None,
                 download: bool = False) -> None:  # fmt: skip
        self.root, self.train = Path(root), train
        paths = self._paths(download)
        images, labels = zip(*(self._read(p) for p in paths), strict=True)
        super().__init__(np.concatenate(images), np.concatenate(labels), transform, target_transform)

    def _read(self, path: Path) -> tuple[np.ndarray, np.ndarray]:
        images, labels = _read_records(path, 1)
        return images, labels[:, 0]

    def _paths(self, download: bool) -> list[Path]:
        names = self.train_files if self.train else self.test_files
        paths = [self.root / self.folder / n for n in names]
        if download and not all(p.exists() for p in paths):
            archive = download_url(self.url, self.root / self.url.rsplit("/", 1)[1], md5=self.md5)
            extract_archive(archive, self.root)
        missing = [p.name for p in paths if not p.exists()]
        if missing:
            where = self.root / self.folder
            raise FileNotFoundError(f"{type(self).__name__}: {', '.join(missing)} missing in {where}; "
                                    f"unpack the binary release ({self.url}) in {self.root}, or pass "
                                    "download=True when the network is available")  # fmt: skip
        return paths


class CIFAR100(CIFAR10):
    """CIFAR-100 from the binary release (``cifar-100-binary/train.bin``, ``test.bin``); targets are the 100
    fine labels (``coarse_targets`` holds the 20 superclasses)."""

    url = "https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz"
    md5: ClassVar[str | None] = "03b5dce01913d631647c71ecec9e9cb8"
    folder = "cifar-100-binary"
    train_files: ClassVar[list[str]] = ["train.bin"]
    test_files: ClassVar[list[str]] = ["test.bin"]
    classes: ClassVar[list[str]] = [f"class_{i}" for i in range(100)]

    def _read(self, path: Path) -> tuple[np.ndarray, np.ndarray]:
        images, labels = _read_records(path, 2)
        self.coarse_targets = labels[:, 0].astype(np.int64)
        if labels[:, 1].max(initial=0) >= 100 or labels[:, 0].max(initial=0) >= 20:
            raise ValueError(f"{path}: labels out of range (fine < 100, coarse < 20); not a CIFAR-100 binary file")
        names = path.parent / "fine_label_names.txt"
        if names.exists():
            self.__dict__["classes"] = names.read_text().split()  # this instance's names, from the release
        return images, labels[:, 1]


class SVHN(_ImageArrays):
    """Street View House Numbers from the cropped-digits ``.mat`` files (``{split}_32x32.mat`` in ``root``).

    ``split`` is ``"train"``, ``"test"`` or ``"extra"``; the files' label 10 (the digit 0) becomes 0. Reading
    ``.mat`` files needs SciPy (``pip install 'ember[data]'``).
    """

    base_url = "http://ufldl.stanford.edu/housenumbers/"
    md5s: ClassVar[dict[str, str | None]] = {
        "train": "e26dedcc434d2e4c54c9b2d4a06d8373", "test": "eb5a983be6a315427106f1b164d9cef3",
        "extra": "a93ce644f1a588dc4d68dda5feec44a7",
    }  # fmt: skip
    classes: ClassVar[list[str]] = [str(d) for d in range(10)]

    def __init__(self, root: str | Path, split: str = "train", transform: Any = None, target_transform: Any = None,
                 download: bool = False) -> None:  # fmt: skip
        if split not in self.md5s:
            raise ValueError(f"SVHN: split must be one of {sorted(self.md5s)}, got {split!r}")
        from .._optional import require

        io = require("scipy.io", "SVHN (.mat files)")
        self.root, self.split = Path(root), split
        path = self.root / f"{split}_32x32.mat"
        if not path.exists():
            if not download:
                raise FileNotFoundError(f"SVHN: {path.name} is missing in {self.root}; place it there, or pass "
                                        f"download=True when the network is available ({self.base_url})")  # fmt: skip
            download_url(self.base_url + path.name, path, md5=self.md5s[split])
        try:
            mat = io.loadmat(path)
        except Exception as e:  # SciPy raises ValueError, TypeError or its own errors for a damaged file
            raise ValueError(f"{path}: not a readable MATLAB .mat file ({type(e).__name__}: {e})") from None
        if "X" not in mat or "y" not in mat:
            raise ValueError(f"{path}: expected arrays 'X' and 'y', found {sorted(k for k in mat if k[:2] != '__')}")
        x, y = np.asarray(mat["X"]), np.asarray(mat["y"]).reshape(-1)
        if x.ndim != 4 or x.shape[2] != 3 or x.shape[3] != len(y):
            raise ValueError(f"{path}: 'X' must be (H, W, 3, N) with N = {len(y)} labels; got {x.shape}")
        labels = np.where(y == 10, 0, y).astype(np.int64)
        super().__init__(np.ascontiguousarray(x.transpose(3, 2, 0, 1).astype(np.uint8)), labels, transform,
                         target_transform)  # fmt: skip
