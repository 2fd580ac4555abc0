"""``DatasetFolder`` and ``ImageFolder``: one sub-folder per class (``root/dog/xxx.png``), torchvision's layout."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .dataset import Dataset

__all__ = ["IMG_EXTENSIONS", "DatasetFolder", "ImageFolder", "default_loader", "pil_loader"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def pil_loader(path: str) -> Any:
    """An image file as an RGB ``PIL.Image`` (decoded now, the file closed)."""
    from .._optional import require

    image = require("PIL.Image", "ImageFolder")
    with open(path, "rb") as f:
        img = image.open(f)
        return img.convert("RGB")


default_loader = pil_loader


class DatasetFolder(Dataset):
    """Samples ``(loader(path), class_index)`` from ``root/<class>/**/<file>``; classes are the sorted sub-folders.

    Files are kept when ``is_valid_file(path)`` is true, or when their name ends with one of ``extensions``
    (case-insensitive). Attributes as torchvision's: ``classes``, ``class_to_idx``, ``samples`` (path, index)
    and ``targets``. A file the loader cannot read raises an error naming the sample's index and path; with
    ``skip_corrupt=True`` it is skipped instead (a warning names it once, ``corrupt`` lists the skipped files)
    and the next readable sample is returned in its place.
    """

    def __init__(self, root: str | os.PathLike[str], loader: Callable[[str], Any],
                 extensions: tuple[str, ...] | None = None, transform: Any = None, target_transform: Any = None,
                 is_valid_file: Callable[[str], bool] | None = None, allow_empty: bool = False,
                 skip_corrupt: bool = False) -> None:  # fmt: skip
        self.root = str(root)
        self.loader, self.extensions = loader, extensions
        self.transform, self.target_transform = transform, target_transform
        self.skip_corrupt = skip_corrupt
        self.classes, self.class_to_idx = self.find_classes(self.root)
        self.samples = self.make_dataset(self.root, self.class_to_idx, extensions, is_valid_file, allow_empty)
        self.targets = [t for _, t in self.samples]
        self.corrupt: list[str] = []
        self._lock = threading.Lock()

    @staticmethod
    def find_classes(directory: str | os.PathLike[str]) -> tuple[list[str], dict[str, int]]:
        """The class names (sorted sub-folder names) and their indices."""
        d = Path(directory)
        if not d.is_dir():
            raise FileNotFoundError(f"DatasetFolder: {d} is not a folder")
        classes = sorted(e.name for e in os.scandir(d) if e.is_dir())
        if not classes:
            raise FileNotFoundError(f"DatasetFolder: no class folders in {d} (expected {d}/<class>/<file>)")
        return classes, {c: i for i, c in enumerate(classes)}

    @staticmethod
    def make_dataset(directory: str | os.PathLike[str], class_to_idx: dict[str, int],
                     extensions: tuple[str, ...] | None = None, is_valid_file: Callable[[str], bool] | None = None,
                     allow_empty: bool = False) -> list[tuple[str, int]]:  # fmt: skip
        """The (path, class index) pairs, classes in order and files sorted within each."""
        if (extensions is None) == (is_valid_file is None):
            raise ValueError("DatasetFolder: give exactly one of extensions and is_valid_file")
        if is_valid_file is None:
            lowered = tuple(e.lower() for e in extensions or ())

            def is_valid_file(path: str) -> bool:
                return path.lower().endswith(lowered)

        samples: list[tuple[str, int]] = []
        empty: list[str] = []
        for name, index in sorted(class_to_idx.items(), key=lambda kv: kv[1]):
            folder = os.path.join(directory, name)
            before = len(samples)
            for base, _, files in sorted(os.walk(folder, followlinks=True)):
                samples += [(p, index) for p in (os.path.join(base, f) for f in sorted(files)) if is_valid_file(p)]
            if len(samples) == before:
                empty.append(name)
        if empty and not allow_empty:
            what = f"extensions {', '.join(extensions)}" if extensions else "is_valid_file"
            raise FileNotFoundError(f"DatasetFolder: no valid file for the classes {', '.join(empty)} in {directory} "
                                    f"(files accepted by {what}); pass allow_empty=True to keep them")  # fmt: skip
        return samples

    def __len__(self) -> int:
        return len(self.samples)

    def _load(self, index: int) -> Any:
        path = self.samples[index][0]
        try:
            return self.loader(path)
        except ImportError:
            raise
        except Exception as e:  # a decoder's error, whatever its type: name the sample and the file
            if not self.skip_corrupt:
                raise ValueError(f"{type(self).__name__}: cannot read sample {index} ({path}): {type(e).__name__}: "
                                 f"{e}; pass skip_corrupt=True to skip such files") from None  # fmt: skip
            with self._lock:
                if path not in self.corrupt:
                    self.corrupt.append(path)
                    warnings.warn(f"{type(self).__name__}: skipping unreadable sample {index} ({path}): {e}",
                                  RuntimeWarning, stacklevel=3)  # fmt: skip
            return None

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        n = len(self.samples)
        if not -n <= index < n:
            raise IndexError(f"{type(self).__name__}: index {index} out of range for {n} samples")
        index %= n
        for offset in range(n):
            i = (index + offset) % n
            sample = self._load(i)
            if sample is not None:
                break
        else:
            raise ValueError(f"{type(self).__name__}: none of the {n} files in {self.root} could be read")
        target = self.samples[i][1]
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target


class ImageFolder(DatasetFolder):
    """Images in ``root/<class>/<file>`` (``IMG_EXTENSIONS``), loaded as RGB ``PIL.Image`` s (Pillow needed:
    ``pip install 'ember[vision]'``). ``transforms.ToTensor()`` or ``PILToTensor()`` make tensors of them."""

    def __init__(self, root: str | os.PathLike[str], transform: Any = None, target_transform: Any = None,
                 loader: Callable[[str], Any] = default_loader, is_valid_file: Callable[[str], bool] | None = None,
                 allow_empty: bool = False, skip_corrupt: bool = False) -> None:  # fmt: skip
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None, transform,
                         target_transform, is_valid_file, allow_empty, skip_corrupt)  # fmt: skip
        self.imgs = self.samples
