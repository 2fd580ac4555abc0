"""``import torch.nn`` where ``torch`` is Ember: the submodule is Ember's own, never a second copy.

A program may alias the name (``sys.modules["torch"] = ember``, or a ``torch`` package forwarding to Ember).
Python then resolves ``import torch.nn.functional as F`` or ``from torch.utils.data import DataLoader`` by
searching the aliased package's ``__path__`` and would execute Ember's files a second time under ``torch.*``
names: a second ``Tensor`` class, a second ``Module``, and functions that refuse each other's tensors. This
finder, first on ``sys.meta_path``, answers ``torch.X`` with the already imported ``ember.X`` whenever the
module named ``torch`` is Ember (or forwards to it); with real PyTorch loaded it answers nothing.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Sequence


def _aliased() -> bool:
    """Whether the module named ``torch`` is Ember, or a package that forwards to it."""
    root = sys.modules.get("torch")
    ember = sys.modules.get("ember")
    if root is None or ember is None:
        return False
    return root is ember or getattr(root, "Tensor", None) is getattr(ember, "Tensor", ())


class TorchAliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Map ``torch.X`` imports to ``ember.X`` while ``torch`` is aliased to Ember."""

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("torch.") or not _aliased():
            return None
        own = "ember." + fullname[len("torch.") :]
        try:
            if own not in sys.modules and importlib.util.find_spec(own) is None:
                return None
        except ModuleNotFoundError:  # a parent that Ember does not have
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = importlib.import_module("ember." + spec.name[len("torch.") :])
        self._specs[spec.name] = module.__spec__  # the import system overwrites it; exec_module restores it
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__spec__.name if module.__spec__ is not None else ""
        if name in self._specs:
            module.__spec__ = self._specs.pop(name)


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, TorchAliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, TorchAliasFinder())
