"""Where a recorded call was made: the user's file and line (and the Ember code under it), for the messages and
for telling a read made by Ember's own code (a value guard) from one in the user's code (not capturable)."""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from ._instr import Ref

__all__ = ["caller", "where", "KIND_WORDS", "GUARDABLE", "bool_index"]

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _library_dirs() -> tuple[str, ...]:
    """This package's folder, NumPy's, torch's and CuPy's (found without importing them)."""
    import importlib.util

    dirs = [os.path.dirname(os.path.abspath(__file__)), os.path.dirname(np.__file__)]
    for name in ("torch", "cupy", "cupyx"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            dirs += list(spec.submodule_search_locations)
    return tuple(d + os.sep for d in dirs)


_SKIP_DIRS = _library_dirs()

KIND_WORDS = {"item": "item()", "bool": "bool()", "int": "int()", "float": "float()", "tolist": "tolist()",
               "numpy": ".numpy()", "print": "printing", "__float__": "float()", "__int__": "int()",
               "__bool__": "bool() (an `if` on a tensor?)", "__index__": "use as an index", "__repr__": "printing",
               "__str__": "printing", "__format__": "formatting", "__array__": "conversion to a NumPy array",
               "value": "a Python value computed from arrays"}  # fmt: skip
GUARDABLE = {"item": "titem", "__float__": "float", "__int__": "int", "__bool__": "bool", "__index__": "int",
              "tolist": "tolist"}  # fmt: skip


def caller() -> tuple[tuple[str, int, str] | None, bool]:
    """``(site, inside)``: the first frame of the user's code (file, line, and the innermost Ember frame
    under it, if any), and whether the read was made by Ember's own code rather than by the user's."""
    f: Any = sys._getframe(2)
    inner = ""
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_SKIP_DIRS):
            if fn.startswith(_EMBER_DIR):
                if not inner:
                    inner = f"ember/{fn[len(_EMBER_DIR) :]}:{f.f_lineno}"
            else:
                return (fn, f.f_lineno, inner), bool(inner)
        f = f.f_back
    return None, bool(inner)


def where(site: Any) -> str:
    """A site in words: ``file:line`` (and the Ember code that did it)."""
    if not site:
        return "an unknown place"
    return f"{site[0]}:{site[1]}" + (f" (in {site[2]})" if len(site) > 2 and site[2] else "")


def bool_index(template: Any, value: Any) -> bool:
    items = template if isinstance(template, tuple) else (template,)
    vals = value if isinstance(value, tuple) else (value,)
    return any(isinstance(t, Ref) and getattr(v, "dtype", None) == np.bool_ for t, v in zip(items, vals, strict=False))
