"""Optional dependencies: import one, or say which ``pip install 'ember[EXTRA]'`` brings it."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]

# module name -> (what pip calls it, the Ember extra that installs it)
_EXTRAS = {
    "PIL": ("Pillow", "vision"),
    "scipy": ("SciPy", "data"),
    "tensorboard": ("tensorboard", "tensorboard"),
    "safetensors": ("safetensors", "record"),
    "matplotlib": ("matplotlib", "plot"),
    "sklearn": ("scikit-learn", "data"),
    "torch": ("torch", "torch"),
}


def require(module: str, purpose: str) -> ModuleType:
    """``import module``, or raise an ``ImportError`` naming ``purpose`` and the install command."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        top = module.partition(".")[0]
        package, extra = _EXTRAS.get(top, (top, ""))
        how = f"pip install 'ember[{extra}]'" if extra else f"pip install {package}"
        raise ImportError(f"{purpose} needs {package}, which is not installed: {how}") from e
