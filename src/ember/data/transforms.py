"""Image transforms with torchvision's names, parameters and semantics, composable with ``Compose``.

Each transform takes an Ember ``Tensor`` or a NumPy array laid out (..., C, H, W) — or (..., H, W) — or a
``PIL.Image``, and returns the same kind (``ToTensor``/``PILToTensor`` return Tensors). Images are uint8 in
[0, 255] or floats in [0, 1]. Random transforms draw from ``generator`` (an ``ember.Generator`` or a NumPy
``Generator``), else from Ember's global generator (``ember.manual_seed``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from enum import Enum, StrEnum
from typing import Any

import numpy as np

from .._tensor import Tensor
from . import _image
from .sampler import _rng

__all__ = [
    "CenterCrop", "ColorJitter", "Compose", "ConvertImageDtype", "GaussianBlur", "InterpolationMode", "Lambda",
    "Normalize", "PILToTensor", "Pad", "RandomCrop", "RandomErasing", "RandomHorizontalFlip", "RandomResizedCrop",
    "RandomRotation", "RandomVerticalFlip", "Resize", "ToTensor",
]  # fmt: skip


class InterpolationMode(StrEnum):
    """Resampling filters (torchvision's enum; the plain strings work too)."""

    NEAREST = "nearest"
    BILINEAR = "bilinear"


def _mode(interpolation: Any, what: str) -> str:
    value = interpolation.value if isinstance(interpolation, Enum) else str(interpolation)
    if value not in ("nearest", "bilinear"):
        raise ValueError(f"{what}: interpolation must be NEAREST or BILINEAR, got {interpolation!r}")
    return value


def _arr(x: Any) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, Tensor) else np.asarray(x)


def _back(out: np.ndarray, like: Tensor) -> Tensor:
    """``out`` as a Tensor on the device (and backend) of the Tensor it was computed from."""
    return Tensor(np.ascontiguousarray(out), device=like.device)


def _image_op(x: Any, fn: Callable[[np.ndarray], np.ndarray]) -> Any:
    """Apply ``fn`` to the (..., C, H, W) array of ``x``; give back the kind of ``x`` (Tensor, array, PIL)."""
    if _image.is_pil(x):
        a, mode = _image.to_chw(x)
        return _image.from_chw(fn(a), mode)
    out = fn(_arr(x))
    return _back(out, x) if isinstance(x, Tensor) else out


def _hw(x: Any) -> tuple[int, int]:
    if _image.is_pil(x):
        return x.size[1], x.size[0]
    h, w = x.shape[-2:]
    return int(h), int(w)


def _size2(size: int | Sequence[int], what: str) -> tuple[int, int]:
    pair = (size, size) if isinstance(size, int) else tuple(size)
    if len(pair) == 1:
        pair = (pair[0], pair[0])
    if len(pair) != 2 or any(int(v) <= 0 for v in pair):
        raise ValueError(f"{what}: size must be a positive int or (h, w), got {size!r}")
    return int(pair[0]), int(pair[1])


def _range(value: Any, name: str, center: float, low: float, high: float, what: str) -> tuple[float, float] | None:
    """torchvision's jitter argument: a number v -> [center - v, center + v] (clipped at ``low``), or (min, max)."""
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"{what}: {name} must be non-negative, got {value}")
        lo, hi = center - float(value), center + float(value)
        lo = max(lo, low) if name != "hue" else lo
    else:
        lo, hi = (float(v) for v in value)
    if not low <= lo <= hi <= high:
        raise ValueError(f"{what}: {name} must lie in [{low}, {high}] with min <= max, got {value!r}")
    return None if lo == hi == center else (lo, hi)


class Compose:
    """Apply ``transforms`` in order."""

    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None:
        self.transforms = list(transforms)

    def __call__(self, x: Any) -> Any:
        for t in self.transforms:
            x = t(x)
        return x

    def __repr__(self) -> str:
        return "Compose(" + ", ".join(repr(t) for t in self.transforms) + ")"


class Lambda:
    """Apply a user function."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, x: Any) -> Any:
        return self.fn(x)


class ToTensor:
    """A PIL image or an (H, W[, C]) array to a float32 Tensor (C, H, W) in [0, 1] (uint8 divided by 255).

    A Tensor is already (C, H, W): uint8 ones are scaled, floating ones converted to float32.
    """

    def __call__(self, img: Any) -> Tensor:
        if isinstance(img, Tensor):
            a = _arr(img)
        else:
            a = _image.to_chw(img)[0] if _image.is_pil(img) else _arr(img)
            if not _image.is_pil(img):
                if a.ndim not in (2, 3):
                    raise ValueError(f"ToTensor: expected an image (H, W) or (H, W, C), got shape {a.shape}")
                a = a[None] if a.ndim == 2 else a.transpose(2, 0, 1)
        a = a.astype(np.float32) / 255.0 if a.dtype == np.uint8 else a.astype(np.float32)
        return _back(a, img) if isinstance(img, Tensor) else Tensor(np.ascontiguousarray(a))


class PILToTensor:
    """A PIL image to a (C, H, W) Tensor of its own dtype (uint8 stays 0-255, no scaling)."""

    def __call__(self, pic: Any) -> Tensor:
        if not _image.is_pil(pic):
            raise TypeError(f"PILToTensor: expected a PIL Image, got {type(pic).__name__}")
        return Tensor(np.ascontiguousarray(_image.to_chw(pic)[0]))


class ConvertImageDtype:
    """Convert a Tensor image's dtype, rescaling values: uint8 0-255 <-> float 0-1 (torchvision's rule: floats
    to integers multiply by ``max + 1 - 0.001`` and truncate; integers to floats divide by ``max``)."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype

    def __call__(self, image: Any) -> Any:
        from .._dtype import as_dtype

        name = as_dtype(self.dtype).name
        if name == "bfloat16":
            raise TypeError("ConvertImageDtype: bfloat16 images are not supported; convert to float32")
        target = np.dtype(name)
        a = _arr(image)
        src = a.dtype
        if src == target:
            out = a
        elif np.issubdtype(src, np.floating) and np.issubdtype(target, np.floating):
            out = a.astype(target)
        elif np.issubdtype(src, np.floating):
            if (src == np.float32 and target in (np.int32, np.int64)) or (src == np.float64 and target == np.int64):
                raise RuntimeError(f"ConvertImageDtype: converting {src} to {target} cannot be done safely")
            out = (a * (np.iinfo(target).max + 1.0 - 1e-3)).astype(target)
        elif np.issubdtype(target, np.floating):
            out = a.astype(target) / np.iinfo(src).max
        else:
            ratio = (int(np.iinfo(target).max) + 1) / (int(np.iinfo(src).max) + 1)
            out = a.astype(np.int64) * int(ratio) if ratio >= 1 else a.astype(np.int64) // int(1 / ratio)
            out = out.astype(target)
        return _back(out, image) if isinstance(image, Tensor) else out


class Normalize:
    """``(x - mean) / std`` per channel of a (C, H, W) float image."""

    def __init__(self, mean: Sequence[float] | float, std: Sequence[float] | float, inplace: bool = False) -> None:
        self.mean = np.asarray(mean, dtype=np.float32).reshape(-1, 1, 1)
        self.std = np.asarray(std, dtype=np.float32).reshape(-1, 1, 1)
        if (self.std == 0).any():
            raise ValueError("Normalize: std must not contain zeros")

    def __call__(self, x: Any) -> Any:
        a = _arr(x)
        if a.ndim < 3 or self.mean.shape[0] not in (1, a.shape[-3]):
            raise ValueError(f"Normalize: expected (C, H, W) with {self.mean.shape[0]} channels, got {a.shape}")
        out = ((a - self.mean) / self.std).astype(np.float32)
        return _back(out, x) if isinstance(x, Tensor) else out

    def __repr__(self) -> str:
        return f"Normalize(mean={self.mean.ravel().tolist()}, std={self.std.ravel().tolist()})"


class Resize:
    """Resize to ``size``: (h, w), or an int that the shorter side becomes (aspect ratio kept, the longer side
    at most ``max_size``). Bilinear resampling is antialiased when shrinking (``antialias=True``, as PIL)."""

    def __init__(self, size: int | Sequence[int], interpolation: Any = InterpolationMode.BILINEAR,
                 max_size: int | None = None, antialias: bool = True) -> None:  # fmt: skip
        self.size = size if isinstance(size, int) else _size2(size, "Resize")
        self.interpolation = _mode(interpolation, "Resize")
        self.max_size, self.antialias = max_size, antialias

    def _target(self, h: int, w: int) -> tuple[int, int]:
        if not isinstance(self.size, int):
            return self.size  # type: ignore[return-value]
        short, long = (h, w) if h <= w else (w, h)
        new_short, new_long = int(self.size), int(int(self.size) * long / short)
        if self.max_size is not None and new_long > self.max_size:
            new_short, new_long = int(self.max_size * new_short / new_long), self.max_size
        return (new_short, new_long) if h <= w else (new_long, new_short)

    def __call__(self, x: Any) -> Any:
        size = self._target(*_hw(x))
        return _image_op(x, lambda a: _image.resize(a, size, self.interpolation, self.antialias))


class CenterCrop:
    """The central ``size`` crop (zero-padded when the image is smaller)."""

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = _size2(size, "CenterCrop")

    def __call__(self, x: Any) -> Any:
        h, w = _hw(x)
        th, tw = self.size
        if th > h or tw > w:  # torchvision pads first (the extra pixel at the bottom/right), then crops
            dh, dw = max(th - h, 0), max(tw - w, 0)
            x = Pad((dw // 2, dh // 2, (dw + 1) // 2, (dh + 1) // 2))(x)
            h, w = _hw(x)
        top, left = round((h - th) / 2.0), round((w - tw) / 2.0)
        return _image_op(x, lambda a: _image.crop(a, top, left, th, tw))


class RandomCrop:
    """A random ``size`` crop, after optional ``padding`` (int, (lr, tb) or (l, t, r, b)) with ``fill`` and
    ``padding_mode``; ``pad_if_needed`` pads an image smaller than the crop."""

    def __init__(self, size: int | Sequence[int], padding: Any = None, pad_if_needed: bool = False, fill: Any = 0,
                 padding_mode: str = "constant", generator: Any = None) -> None:  # fmt: skip
        self.size = _size2(size, "RandomCrop")
        self.pad = Pad(padding, fill, padding_mode) if padding else None
        self.pad_if_needed, self.fill, self.padding_mode, self.generator = pad_if_needed, fill, padding_mode, generator

    def __call__(self, x: Any) -> Any:
        if self.pad is not None:
            x = self.pad(x)
        h, w = _hw(x)
        th, tw = self.size
        if self.pad_if_needed and (h < th or w < tw):
            x = Pad((max(0, tw - w), max(0, th - h)), self.fill, self.padding_mode)(x)
            h, w = _hw(x)
        if th > h or tw > w:
            raise ValueError(f"RandomCrop: crop {self.size} is larger than the image {(h, w)}")
        rng = _rng(self.generator)
        i, j = int(rng.integers(0, h - th + 1)), int(rng.integers(0, w - tw + 1))
        return _image_op(x, lambda a: _image.crop(a, i, j, th, tw))


class RandomResizedCrop:
    """A random crop of ``scale`` of the area and aspect ratio in ``ratio`` (log-uniform), resized to ``size``;
    after 10 failed draws, the central crop with the ratio clamped to ``ratio`` (torchvision's procedure)."""

    def __init__(self, size: int | Sequence[int], scale: tuple[float, float] = (0.08, 1.0),
                 ratio: tuple[float, float] = (3 / 4, 4 / 3), interpolation: Any = InterpolationMode.BILINEAR,
                 antialias: bool = True, generator: Any = None) -> None:  # fmt: skip
        self.size = _size2(size, "RandomResizedCrop")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError(f"RandomResizedCrop: scale and ratio must be (min, max), got {scale} and {ratio}")
        self.scale, self.ratio = (float(scale[0]), float(scale[1])), (float(ratio[0]), float(ratio[1]))
        self.interpolation = _mode(interpolation, "RandomResizedCrop")
        self.antialias, self.generator = antialias, generator

    def get_params(self, h: int, w: int) -> tuple[int, int, int, int]:
        """(top, left, height, width) of the crop."""
        rng, area = _rng(self.generator), h * w
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            target = area * rng.uniform(*self.scale)
            aspect = math.exp(rng.uniform(*log_ratio))
            cw, ch = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))
            if 0 < cw <= w and 0 < ch <= h:
                return int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1)), ch, cw
        in_ratio = w / h
        if in_ratio < min(self.ratio):
            cw, ch = w, round(w / min(self.ratio))
        elif in_ratio > max(self.ratio):
            ch, cw = h, round(h * max(self.ratio))
        else:
            cw, ch = w, h
        return (h - ch) // 2, (w - cw) // 2, ch, cw

    def __call__(self, x: Any) -> Any:
        top, left, ch, cw = self.get_params(*_hw(x))
        return _image_op(x, lambda a: _image.resize(_image.crop(a, top, left, ch, cw), self.size,
                                                    self.interpolation, self.antialias))  # fmt: skip


class Pad:
    """Pad by ``padding`` (int, (left/right, top/bottom) or (left, top, right, bottom)); ``padding_mode`` is
    constant (with ``fill``, a number or one per channel), edge, reflect or symmetric."""

    def __init__(self, padding: int | Sequence[int], fill: Any = 0, padding_mode: str = "constant") -> None:
        p = [padding] if isinstance(padding, int) else list(padding)
        if len(p) not in (1, 2, 4) or any(int(v) < 0 for v in p):
            raise ValueError(f"Pad: padding must be a non-negative int or 2 or 4 of them, got {padding!r}")
        self.ltrb = (p * 4 if len(p) == 1 else p * 2 if len(p) == 2 else p)[:4]
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError(f"Pad: padding_mode must be constant, edge, reflect or symmetric, got {padding_mode!r}")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def __call__(self, x: Any) -> Any:
        left, top, right, bottom = (int(v) for v in self.ltrb)
        return _image_op(x, lambda a: _image.pad(a, (left, top, right, bottom), self.fill, self.padding_mode))


class RandomHorizontalFlip:
    """Mirror left-right with probability ``p``."""

    def __init__(self, p: float = 0.5, generator: Any = None) -> None:
        self.p, self.generator = p, generator

    def __call__(self, x: Any) -> Any:
        if _rng(self.generator).random() >= self.p:
            return x
        return _image_op(x, lambda a: np.ascontiguousarray(a[..., ::-1]))


class RandomVerticalFlip:
    """Mirror top-bottom with probability ``p``."""

    def __init__(self, p: float = 0.5, generator: Any = None) -> None:
        self.p, self.generator = p, generator

    def __call__(self, x: Any) -> Any:
        if _rng(self.generator).random() >= self.p:
            return x
        return _image_op(x, lambda a: np.ascontiguousarray(a[..., ::-1, :]))


class ColorJitter:
    """Random brightness, contrast, saturation (factors in [max(0, 1 - v), 1 + v] for a number v, or (min, max))
    and hue (shift in [-h, h], h <= 0.5), applied in a random order."""

    def __init__(self, brightness: Any = 0, contrast: Any = 0, saturation: Any = 0, hue: Any = 0,
                 generator: Any = None) -> None:  # fmt: skip
        self.brightness = _range(brightness, "brightness", 1.0, 0.0, math.inf, "ColorJitter")
        self.contrast = _range(contrast, "contrast", 1.0, 0.0, math.inf, "ColorJitter")
        self.saturation = _range(saturation, "saturation", 1.0, 0.0, math.inf, "ColorJitter")
        self.hue = _range(hue, "hue", 0.0, -0.5, 0.5, "ColorJitter")
        self.generator = generator

    def get_params(self) -> tuple[list[int], list[float | None]]:
        """The order of the four adjustments and each factor (None: not applied)."""
        rng = _rng(self.generator)
        order = [int(i) for i in rng.permutation(4)]
        ranges = (self.brightness, self.contrast, self.saturation, self.hue)
        return order, [None if r is None else float(rng.uniform(*r)) for r in ranges]

    def __call__(self, x: Any) -> Any:
        order, factors = self.get_params()
        kinds = ("brightness", "contrast", "saturation", "hue")

        def run(a: np.ndarray) -> np.ndarray:
            for i in order:
                if factors[i] is not None:
                    a = _image.adjust(a, kinds[i], factors[i])  # type: ignore[arg-type]
            return a

        return _image_op(x, run)


class RandomRotation:
    """Rotate by an angle drawn from ``degrees`` (d: [-d, d], or (min, max)) counter-clockwise about ``center``
    (default the image centre); ``fill`` outside the image; ``expand`` enlarges the output to hold it all."""

    def __init__(self, degrees: Any, interpolation: Any = InterpolationMode.NEAREST, expand: bool = False,
                 center: Sequence[float] | None = None, fill: Any = 0, generator: Any = None) -> None:  # fmt: skip
        self.degrees = _range(degrees, "degrees", 0.0, -math.inf, math.inf, "RandomRotation") or (0.0, 0.0)
        self.interpolation = _mode(interpolation, "RandomRotation")
        self.expand, self.fill, self.generator = expand, fill, generator
        self.center = None if center is None else (float(center[0]), float(center[1]))

    def __call__(self, x: Any) -> Any:
        angle = float(_rng(self.generator).uniform(*self.degrees))
        return _image_op(x, lambda a: _image.rotate(a, angle, self.interpolation, self.expand, self.center,
                                                    self.fill))  # fmt: skip


class GaussianBlur:
    """Blur with a Gaussian kernel of ``kernel_size`` (odd, int or (kx, ky)) and a sigma drawn from ``sigma``
    (a number, or (min, max)); the border is reflected."""

    def __init__(self, kernel_size: int | Sequence[int], sigma: Any = (0.1, 2.0), generator: Any = None) -> None:
        ks = _size2(kernel_size, "GaussianBlur")
        if any(k % 2 == 0 for k in ks):
            raise ValueError(f"GaussianBlur: kernel_size must be odd and positive, got {kernel_size!r}")
        self.kernel_size = ks
        lo, hi = (float(sigma), float(sigma)) if isinstance(sigma, (int, float)) else (float(s) for s in sigma)
        if not 0 < lo <= hi:
            raise ValueError(f"GaussianBlur: sigma must be positive (min <= max), got {sigma!r}")
        self.sigma, self.generator = (lo, hi), generator

    def __call__(self, x: Any) -> Any:
        s = float(_rng(self.generator).uniform(*self.sigma)) if self.sigma[0] != self.sigma[1] else self.sigma[0]
        return _image_op(x, lambda a: _image.blur(a, self.kernel_size, (s, s)))


class RandomErasing:
    """With probability ``p``, set a random rectangle of a (C, H, W) Tensor image to ``value`` (a number, one
    per channel, or ``"random"``: normal noise); its area is ``scale`` of the image, its aspect ``ratio``."""

    def __init__(self, p: float = 0.5, scale: tuple[float, float] = (0.02, 0.33),
                 ratio: tuple[float, float] = (0.3, 3.3), value: Any = 0, inplace: bool = False,
                 generator: Any = None) -> None:  # fmt: skip
        if not 0 <= p <= 1 or scale[0] > scale[1] or ratio[0] > ratio[1] or not 0 <= scale[0] <= 1:
            raise ValueError(f"RandomErasing: p in [0, 1], scale and ratio (min, max); got {p}, {scale}, {ratio}")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, scale, ratio, value, inplace
        self.generator = generator

    def __call__(self, img: Any) -> Any:
        if _image.is_pil(img):
            raise TypeError("RandomErasing: expected a Tensor image (C, H, W); apply ToTensor() first")
        rng = _rng(self.generator)
        if rng.random() >= self.p:
            return img
        a = _arr(img)
        _c, h, w = a.shape[-3:] if a.ndim >= 3 else (1, *a.shape[-2:])
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            area = h * w * rng.uniform(*self.scale)
            aspect = math.exp(rng.uniform(*log_ratio))
            eh, ew = round(math.sqrt(area * aspect)), round(math.sqrt(area / aspect))
            if eh < h and ew < w:
                break
        else:
            return img
        i, j = int(rng.integers(0, h - eh + 1)), int(rng.integers(0, w - ew + 1))
        out = a.copy()
        if isinstance(self.value, str):
            if self.value != "random":
                raise ValueError(f"RandomErasing: value must be a number, a sequence or 'random', got {self.value!r}")
            patch = rng.standard_normal(a.shape[:-2] + (eh, ew)).astype(a.dtype)
        else:
            patch = np.asarray(self.value, dtype=a.dtype).reshape((-1, 1, 1) if np.ndim(self.value) else ())
        out[..., i : i + eh, j : j + ew] = patch
        if not isinstance(img, Tensor):
            return out
        return img.copy_(_back(out, img)) if self.inplace else _back(out, img)
