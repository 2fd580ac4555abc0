"""Run PyTorch code on Ember: ``ember.as_torch()`` makes ``import torch`` give Ember in this process, and
``python -m ember.run_as_torch program.py [args]`` runs a program so.

``torch`` is then a module of that name forwarding to Ember (``sys.modules["torch"] = ember`` works too, but
libraries also read ``torch.__name__`` and ``torch.__version__``): its ``__version__`` is the PyTorch release whose
API Ember follows, with Ember's version as the local label (``2.13.0+ember.0.1.0``), and ``import torch.nn`` or
``from torch.utils.data import DataLoader`` give Ember's own modules (``_torch_alias``).
"""

from __future__ import annotations

import importlib.machinery
import runpy
import sys
import types
from typing import Any

__all__ = ["as_torch"]


def as_torch() -> types.ModuleType:
    """Make ``import torch`` give Ember in this process (a module named ``torch`` forwarding to ``ember``); the
    module is returned. Refused when real PyTorch is already imported here."""
    import ember

    from .torch_version import torch_alias_version

    have = sys.modules.get("torch")
    if have is not None:
        if have is ember or getattr(have, "Tensor", None) is ember.Tensor:
            return have
        raise RuntimeError("as_torch: PyTorch is already imported in this process; call ember.as_torch() before "
                           "anything imports torch")  # fmt: skip
    mod = types.ModuleType("torch", ember.__doc__)
    mod.__dict__.update({k: v for k, v in vars(ember).items() if not k.startswith("__")})
    mod.__version__ = torch_alias_version()  # type: ignore[attr-defined]
    mod.__file__ = ember.__file__
    mod.__path__ = []  # type: ignore[attr-defined] # a package: its submodules are Ember's (_torch_alias's finder)
    mod.__spec__ = importlib.machinery.ModuleSpec("torch", None, is_package=True)

    def forward(name: str) -> Any:  # the module's __getattr__: what Ember defines later, or lazily
        return getattr(ember, name)

    mod.__dict__["__getattr__"] = forward
    sys.modules["torch"] = mod
    return mod


def main(argv: list[str]) -> None:
    """``python -m ember.run_as_torch program.py [args]``: the program runs as ``__main__`` with ``torch`` = Ember."""
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m ember.run_as_torch program.py [args...]   (runs a PyTorch program on Ember)")
        raise SystemExit(0 if argv else 2)
    as_torch()
    sys.argv = list(argv)
    runpy.run_path(argv[0], run_name="__main__")
