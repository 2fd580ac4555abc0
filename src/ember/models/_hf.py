"""Reading Hugging Face checkpoints: ``config.json`` and ``model.safetensors`` (or its shards), no transformers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import EmberError
from .._tensor import Tensor
from ..nn import functional as F
from ._weights import read_state_dict

__all__ = ["UnsupportedConfigError", "activation", "read_config", "read_weights", "reject"]


class UnsupportedConfigError(EmberError, ValueError):
    """A Hugging Face config Ember cannot build (another architecture, or an option it does not implement)."""


def read_config(directory: str | Path, model_types: tuple[str, ...], module: str) -> dict[str, Any]:
    """``directory/config.json``, checked to describe one of ``model_types``."""
    path = Path(directory) / "config.json"
    if not path.exists():
        raise FileNotFoundError(f"{module}.from_pretrained: no config.json in {directory} (expected a folder saved "
                                "by transformers' save_pretrained: config.json + model.safetensors)")  # fmt: skip
    try:
        config = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    kind = config.get("model_type")
    if kind not in model_types:
        found = f"model_type {kind!r} (architectures {config.get('architectures')})"
        raise UnsupportedConfigError(f"{path}: {found} is not supported by {module}; it reads "
                                     f"{', '.join(model_types)} checkpoints")  # fmt: skip
    return config  # type: ignore[no-any-return]


def reject(config: dict[str, Any], path: str, module: str, **unsupported: Any) -> None:
    """Refuse options Ember does not implement: ``unsupported`` maps a key to the only value Ember accepts."""
    for key, accepted in unsupported.items():
        value = config.get(key, accepted)
        if value != accepted and value is not None:
            raise UnsupportedConfigError(f"{path}/config.json: {key}={value!r} is not supported by {module} "
                                         f"(only {accepted!r})")  # fmt: skip


def read_weights(directory: str | Path) -> tuple[dict[str, np.ndarray], str]:
    """The checkpoint's arrays and the file(s) they came from: ``model.safetensors``, its shards
    (``model.safetensors.index.json``), or ``pytorch_model.bin`` (read without executing pickled code)."""
    d = Path(directory)
    single, index, legacy = d / "model.safetensors", d / "model.safetensors.index.json", d / "pytorch_model.bin"
    if single.exists():
        return read_state_dict(single), str(single)
    if index.exists():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        state: dict[str, np.ndarray] = {}
        for shard in shards:
            state.update(read_state_dict(d / shard))
        return state, str(index)
    if legacy.exists():
        return read_state_dict(legacy), str(legacy)
    raise FileNotFoundError(f"no model.safetensors (or model.safetensors.index.json, pytorch_model.bin) in {d}")


def _gelu_tanh(x: Tensor) -> Tensor:
    return F.gelu(x, approximate="tanh")


ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "gelu": F.gelu, "gelu_new": _gelu_tanh, "gelu_pytorch_tanh": _gelu_tanh, "relu": F.relu, "silu": F.silu,
    "swish": F.silu, "tanh": lambda x: x.tanh(),
}  # fmt: skip


def activation(name: str, path: str, module: str) -> Callable[[Tensor], Tensor]:
    if name not in ACTIVATIONS:
        raise UnsupportedConfigError(f"{path}/config.json: activation {name!r} is not supported by {module} "
                                     f"(supported: {', '.join(ACTIVATIONS)})")  # fmt: skip
    return ACTIVATIONS[name]
