"""Image transforms as array operations (on NumPy arrays or Tensors), composable with ``Compose``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._tensor import Tensor
from ..nn.functional import interpolate
from .sampler import _rng

__all__ = ["Compose", "Lambda", "Normalize", "RandomCrop", "RandomHorizontalFlip", "Resize", "ToTensor"]


def _arr(x: Any) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, Tensor) else np.asarray(x)


class Compose:
    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None:
        self.transforms = list(transforms)

    def __call__(self, x: Any) -> Any:
        for t in self.transforms:
            x = t(x)
        return x

    def __repr__(self) -> str:
        return "Compose(" + ", ".join(repr(t) for t in self.transforms) + ")"


class Lambda:
    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, x: Any) -> Any:
        return self.fn(x)


class ToTensor:
    """An image (H, W) or (H, W, C), uint8 in [0, 255] or float, to a float32 Tensor (C, H, W) in [0, 1]."""

    def __call__(self, img: Any) -> Tensor:
        a = _arr(img)
        if a.ndim == 2:
            a = a[None]
        elif a.ndim == 3:
            a = a.transpose(2, 0, 1)
        else:
            raise ValueError(f"ToTensor: expected an image (H, W) or (H, W, C), got shape {a.shape}")
        a = a.astype(np.float32) / 255.0 if a.dtype == np.uint8 else a.astype(np.float32)
        return Tensor(np.ascontiguousarray(a))


class Normalize:
    """``(x - mean) / std`` per channel of a (C, H, W) image."""

    def __init__(self, mean: Sequence[float] | float, std: Sequence[float] | float) -> None:
        self.mean = np.asarray(mean, dtype=np.float32).reshape(-1, 1, 1)
        self.std = np.asarray(std, dtype=np.float32).reshape(-1, 1, 1)
        if (self.std == 0).any():
            raise ValueError("Normalize: std must not contain zeros")

    def __call__(self, x: Any) -> Any:
        a = _arr(x)
        if a.ndim != 3 or self.mean.shape[0] not in (1, a.shape[0]):
            raise ValueError(f"Normalize: expected (C, H, W) with {self.mean.shape[0]} channels, got {a.shape}")
        out = (a - self.mean) / self.std
        return Tensor(out.astype(np.float32)) if isinstance(x, Tensor) else out.astype(np.float32)

    def __repr__(self) -> str:
        return f"Normalize(mean={self.mean.ravel().tolist()}, std={self.std.ravel().tolist()})"


class RandomCrop:
    """A random ``size`` crop of a (..., H, W) image, after optional zero ``padding``."""

    def __init__(self, size: int | tuple[int, int], padding: int = 0, generator: Any = None) -> None:
        self.size = (size, size) if isinstance(size, int) else tuple(size)
        self.padding, self.generator = padding, generator

    def __call__(self, x: Any) -> Any:
        a = _arr(x)
        if self.padding:
            pad = [(0, 0)] * (a.ndim - 2) + [(self.padding, self.padding)] * 2
            a = np.pad(a, pad)
        h, w = a.shape[-2:]
        th, tw = self.size
        if th > h or tw > w:
            raise ValueError(f"RandomCrop: crop {self.size} is larger than the image {(h, w)}")
        rng = _rng(self.generator)
        i, j = int(rng.integers(0, h - th + 1)), int(rng.integers(0, w - tw + 1))
        out = np.ascontiguousarray(a[..., i : i + th, j : j + tw])
        return Tensor(out) if isinstance(x, Tensor) else out


class RandomHorizontalFlip:
    def __init__(self, p: float = 0.5, generator: Any = None) -> None:
        self.p, self.generator = p, generator

    def __call__(self, x: Any) -> Any:
        if _rng(self.generator).random() >= self.p:
            return x
        out = np.ascontiguousarray(_arr(x)[..., ::-1])
        return Tensor(out) if isinstance(x, Tensor) else out


class Resize:
    """Resize the last two dims to ``size`` (bilinear, or nearest)."""

    def __init__(self, size: int | tuple[int, int], interpolation: str = "bilinear") -> None:
        self.size = (size, size) if isinstance(size, int) else tuple(size)
        if interpolation not in ("bilinear", "nearest"):
            raise ValueError(f"Resize: interpolation must be 'bilinear' or 'nearest', got {interpolation!r}")
        self.interpolation = interpolation

    def __call__(self, x: Any) -> Any:
        a = _arr(x)
        lead = a.shape[:-2]
        t = Tensor(a.reshape((1, -1) + a.shape[-2:]).astype(np.float32, copy=False))
        out = interpolate(t, size=self.size, mode=self.interpolation).numpy().reshape(lead + self.size)
        return Tensor(out) if isinstance(x, Tensor) else out
