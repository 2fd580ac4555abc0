"""Ready datasets: MNIST / Fashion-MNIST from IDX files, the bundled 8x8 digits, CSV and ``.npz`` files."""

from __future__ import annotations

import gzip
import struct
import zipfile
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ._download import download_url
from .dataset import TensorDataset

__all__ = ["MNIST", "CSVDataset", "FashionMNIST", "NpzDataset", "digits", "read_idx"]

_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | Path) -> np.ndarray:
    """Read an IDX file (plain or gzipped), checking its header and size."""
    p = Path(path)
    raw = p.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise ValueError(f"{p}: corrupted gzip stream ({e})") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise ValueError(f"{p}: not an IDX file (bad magic number)")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{p}: truncated IDX header")
    shape = struct.unpack(">" + "I" * ndim, raw[4:header])
    dtype: np.dtype[Any] = np.dtype(_IDX_TYPES[raw[2]])  # type: ignore[call-overload]
    need = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header != need:
        raise ValueError(f"{p}: expected {need} data bytes for shape {shape}, found {len(raw) - header}")
    return np.frombuffer(raw, dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


class _IdxImages(TensorDataset):
    """(image float32 (1, 28, 28) in [0, 1], label int64) pairs from the four IDX files of an MNIST-like set."""

    base_url = ""
    files: ClassVar[dict[str, tuple[str, str]]] = {}

    def __init__(self, root: str | Path, train: bool = True, download: bool = False, transform: Any = None) -> None:
        self.root = Path(root)
        split = "train" if train else "t10k"
        names = [f"{split}-images-idx3-ubyte", f"{split}-labels-idx1-ubyte"]
        paths = [self._find(n, download) for n in names]
        images, labels = read_idx(paths[0]), read_idx(paths[1])
        if len(images) != len(labels):
            raise ValueError(f"{self.root}: {len(images)} images but {len(labels)} labels")
        x = (images.astype(np.float32) / 255.0)[:, None]
        super().__init__(x, labels.astype(np.int64))
        self.transform = transform

    def _find(self, name: str, download: bool) -> Path:
        for cand in (self.root / name, self.root / (name + ".gz")):
            if cand.exists():
                return cand
        if download:
            return self._download(name + ".gz")
        expected = ", ".join(f"{n}[.gz]" for n in self.files)
        raise FileNotFoundError(
            f"{type(self).__name__}: {name}[.gz] is missing. Place the IDX files ({expected}) in {self.root}, "
            f"or pass download=True when the network is available (from {self.base_url})"
        )

    def _download(self, fname: str) -> Path:
        digest = self.files.get(fname.removesuffix(".gz"), ("", ""))[1]
        url = self.base_url + fname
        dest = self.root / fname
        return download_url(url, dest, sha256=digest or None)

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        x, y = super().__getitem__(index)
        return (self.transform(x) if self.transform else x), y

    def get_batch(self, indices: Any) -> Any:
        if self.transform is not None:
            raise AttributeError("get_batch")  # per-sample transforms: the loader falls back to __getitem__
        return super().get_batch(indices)


class MNIST(_IdxImages):
    """The MNIST digits from their IDX files in ``root``."""

    base_url = "https://ossci-datasets.s3.amazonaws.com/mnist/"
    files: ClassVar[dict[str, tuple[str, str]]] = {
        "train-images-idx3-ubyte": ("", "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"),
        "train-labels-idx1-ubyte": ("", "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"),
        "t10k-images-idx3-ubyte": ("", "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"),
        "t10k-labels-idx1-ubyte": ("", "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"),
    }


class FashionMNIST(_IdxImages):
    """Fashion-MNIST (Zalando) from its IDX files in ``root``."""

    base_url = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
    files: ClassVar[dict[str, tuple[str, str]]] = {n: ("", "") for n in MNIST.files}


def digits(train: bool = True, valid_fraction: float = 0.2, seed: int = 0, images: bool = True) -> TensorDataset:
    """The 8x8 handwritten digits bundled with Ember (1797 samples): (1, 8, 8) float32 images in [0, 1], int64 labels.

    The data is the UCI "Optical Recognition of Handwritten Digits" test set (E. Alpaydin, C. Kaynak; CC BY 4.0),
    in the order scikit-learn's ``load_digits`` gives it. The same ``seed`` always gives the same
    train/validation split; ``images=False`` gives flat (64,) rows.
    """
    with np.load(Path(__file__).with_name("digits.npz"), allow_pickle=False) as f:
        pixels, labels = f["images"], f["labels"]
    x = (pixels / 16.0).astype(np.float32)
    x = x[:, None] if images else x.reshape(len(x), -1)
    y = labels.astype(np.int64)
    perm = np.random.default_rng(seed).permutation(len(x))
    n_valid = round(len(x) * valid_fraction)
    idx = perm[n_valid:] if train else perm[:n_valid]
    return TensorDataset(x[idx], y[idx])


class CSVDataset(TensorDataset):
    """Rows of a numeric CSV file: ``target`` column(s) split from the features."""

    def __init__(self, path: str | Path, target: int | str = -1, delimiter: str = ",", header: bool | None = None,
                 target_dtype: Any = None) -> None:  # fmt: skip
        p = Path(path)
        with open(p) as f:
            first = f.readline().strip().split(delimiter)
        has_header = header if header is not None else not all(_is_number(c) for c in first)
        try:
            data = np.loadtxt(p, delimiter=delimiter, skiprows=1 if has_header else 0, ndmin=2, dtype=np.float64)
        except ValueError as e:
            raise ValueError(f"{p}: not a numeric CSV ({e})") from None
        col = first.index(target) if isinstance(target, str) else target
        if isinstance(target, str) and not has_header:
            raise ValueError(f"{p}: a target name needs a header row")
        y = data[:, col]
        x = np.delete(data, col, axis=1).astype(np.float32)
        if target_dtype is None:
            target_dtype = np.int64 if np.all(y == np.round(y)) else np.float32
        super().__init__(x, y.astype(target_dtype))


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


class NpzDataset(TensorDataset):
    """Arrays of a ``.npz`` file (``keys`` in order, default all); loaded without pickle."""

    def __init__(self, path: str | Path, keys: tuple[str, ...] | None = None) -> None:
        p = Path(path)
        with open(p, "rb") as fh:
            if fh.read(4) != b"PK\x03\x04":  # (np.load would take anything else for a pickle)
                raise ValueError(f"{p}: truncated or corrupt, or not a .npz file (it does not start as a zip archive)")
            fh.seek(0)
            try:
                with np.load(fh, allow_pickle=False) as f:
                    names = keys or tuple(f.files)
                    missing = [k for k in names if k not in f.files]
                    if missing:
                        raise KeyError(f"{path}: no arrays named {missing}; it holds {f.files}")
                    arrays = [f[k] for k in names]
            except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
                raise ValueError(f"{p}: truncated or corrupt .npz file ({type(e).__name__}: {e})") from None
        super().__init__(*arrays)
