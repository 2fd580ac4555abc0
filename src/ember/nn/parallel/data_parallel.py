"""``DataParallel``: PyTorch's single-process wrapper, kept for the programs that write ``nn.DataParallel(model)``.

Without CUDA (PyTorch's CPU build too) it holds the module and calls it: ``.module``, ``device_ids == []`` and
state dict keys that start with ``module.``, as in PyTorch. With CUDA, the inputs go to ``device_ids[0]`` and the
outputs to ``output_device``. Ember does not split a batch over several GPUs in one process (one process per device
with ``DistributedDataParallel`` is the design): with several ``device_ids`` the whole batch runs on the first, with
a warning, once.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from ... import cuda
from ..._device import device as _device
from ..module import Module
from .distributed import _tensors, _to

__all__ = ["DataParallel"]

_WARNED: list[bool] = [False]


def _index(d: Any) -> int:
    """A CUDA device index from an int, ``"cuda:1"`` or an ``ember.device``."""
    if isinstance(d, int):
        return d
    dev = _device(d)
    if dev.type != "cuda":
        raise ValueError(f"DataParallel: expected a CUDA device, got {dev}")
    return dev.index or 0


class DataParallel(Module):
    """Run ``module`` on ``device_ids[0]`` (or as it is, without CUDA); see the module docstring."""

    def __init__(
        self,
        module: Module,
        device_ids: Sequence[int | Any] | None = None,
        output_device: int | Any | None = None,
        dim: int = 0,
    ) -> None:
        super().__init__()
        self.module = module
        if not cuda.is_available():
            self.device_ids: list[int] = []
            return
        ids = list(range(cuda.device_count())) if device_ids is None else [_index(d) for d in device_ids]
        if not ids:
            raise ValueError("DataParallel: device_ids is empty")
        self.device_ids = ids
        self.dim = dim
        self.output_device = _index(ids[0] if output_device is None else output_device)
        self.src_device_obj = _device(f"cuda:{ids[0]}")
        if len(ids) > 1 and not _WARNED[0]:
            _WARNED[0] = True
            warnings.warn(
                f"DataParallel over {len(ids)} GPUs runs the whole batch on cuda:{ids[0]} in Ember; "
                "use DistributedDataParallel (one process per GPU) to use them all",
                UserWarning,
                stacklevel=2,
            )

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in (*self.module.parameters(), *self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(
                    f"module must have its parameters and buffers on device {self.src_device_obj} (device_ids[0]) "
                    f"but found one of them on device: {t.device}"
                )
        out = self.module(*_to(inputs, self.src_device_obj), **_to(kwargs, self.src_device_obj))
        target = _device(f"cuda:{self.output_device}")
        return out if all(t.device == target for t in _tensors(out)) else _to(out, target)
