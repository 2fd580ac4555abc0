"""Loading pretrained weights into a model: every key and shape checked before anything is copied."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import EmberError

__all__ = ["WeightsMismatchError", "load_checked", "read_state_dict"]

_SHOWN = 5


class WeightsMismatchError(EmberError, ValueError):
    """A weights file whose keys or shapes do not match the architecture (a ``ValueError`` and a ``RuntimeError``)."""


def read_state_dict(path: str | Path) -> dict[str, np.ndarray]:
    """A ``.pth``/``.pt`` (PyTorch zip, read without executing pickled code; torch not needed) or ``.safetensors``
    file as NumPy arrays."""
    from ..record._torch import load_torch_state_dict

    p = Path(path)
    if p.suffix == ".safetensors":
        from .._optional import require

        require("safetensors", f"reading {p.name}")
    return load_torch_state_dict(p)


def _listing(items: list[str], what: str) -> str:
    more = f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return f"{len(items)} {what}: {', '.join(items[:_SHOWN])}{more}"


def load_checked(model: Any, state: Mapping[str, Any], source: str, ignore: tuple[str, ...] = ()) -> None:
    """Copy ``state`` into ``model`` after checking it holds exactly the model's keys with the same shapes.

    Keys ending with one of ``ignore`` may be absent from ``state`` (tied or recomputed tensors). On any
    mismatch nothing is loaded and a ``WeightsMismatchError`` lists the first missing, unexpected and
    differently shaped keys, naming ``source``.
    """
    own = model.state_dict()
    missing = [k for k in own if k not in state and not k.endswith(ignore)]
    unexpected = [k for k in state if k not in own]
    shapes = [f"{k} (file {tuple(np.shape(state[k]))}, model {tuple(own[k].shape)})"
              for k in own if k in state and tuple(np.shape(state[k])) != tuple(own[k].shape)]  # fmt: skip
    if missing or unexpected or shapes:
        parts = [_listing(v, w) for v, w in ((missing, "missing keys"), (unexpected, "unexpected keys"),
                                             (shapes, "shape mismatches")) if v]  # fmt: skip
        raise WeightsMismatchError(f"{source}: the weights do not fit {type(model).__name__}: " + "; ".join(parts)
                                   + " (is it the right architecture, depth and num_classes?)")  # fmt: skip
    model.load_state_dict({k: state[k] for k in own if k in state}, strict=False)


def load_weights_file(model: Any, weights: str | Path, ignore: tuple[str, ...] = ()) -> Any:
    """``model`` with the weights of the file ``weights`` (see ``read_state_dict``), in eval mode."""
    load_checked(model, read_state_dict(weights), str(weights), ignore)
    return model.eval()
