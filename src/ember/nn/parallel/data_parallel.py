"""``DataParallel``: PyTorch's single-process wrapper, which splits each batch over the visible GPUs.

Without CUDA (or with one device) PyTorch's wrapper only calls the module, and so does Ember's: the model is
``.module``, the state-dict keys start with ``module.``, and the outputs and gradients are the module's own.
Ember runs one process per device instead of replicating a module across threads, so more than one device
is refused at construction with the way that works: ``DistributedDataParallel`` (one process per GPU, which
PyTorch recommends over ``DataParallel`` too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import cuda
from ..._device import device
from ..module import Module
from .distributed import _to

__all__ = ["DataParallel"]


def _index(d: Any) -> int:
    if isinstance(d, int) and not isinstance(d, bool):
        return d
    dev = device(d)
    if dev.type != "cuda":
        raise ValueError(f"DataParallel: expected a CUDA device or index, got {d!r}")
    return dev.index or 0


class DataParallel(Module):
    """Runs ``module``; with CUDA, on ``device_ids[0]`` (inputs moved there). More than one device: use DDP."""

    def __init__(
        self,
        module: Module,
        device_ids: Sequence[int | device] | None = None,
        output_device: int | device | None = None,
        dim: int = 0,
    ) -> None:
        super().__init__()
        self.module = module
        if not cuda.is_available():  # as PyTorch without an accelerator: a plain call
            self.device_ids: list[int] = []
            return
        ids = [_index(d) for d in device_ids] if device_ids is not None else list(range(cuda.device_count()))
        if len(ids) > 1:
            raise RuntimeError(
                f"DataParallel over {len(ids)} devices {ids}: Ember does not replicate a module across devices in "
                "one process; run one process per device with nn.parallel.DistributedDataParallel "
                "(torchrun or ember.multiprocessing.spawn), or pass device_ids=[i] for one device"
            )
        if not ids:
            raise RuntimeError("no available devices were found")
        self.dim = dim
        self.device_ids = ids
        self.output_device = _index(output_device) if output_device is not None else ids[0]
        self.src_device_obj = device("cuda", ids[0])
        self.module.to(self.src_device_obj)

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
        return out if self.output_device == self.device_ids[0] else _to(out, device("cuda", self.output_device))
