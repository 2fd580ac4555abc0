"""Whole objects in files (a module, any class): pickle, under PyTorch >= 2.6's consent rule.

``ember.save`` pickles what its record format cannot hold (a ``Module``, a set, a user's class) inside the
same container: every tensor goes to the record as an item (a *persistent id* in the pickle), the pickle
itself to the record's metadata. Unpickling can run code, so ``ember.load`` reads a pickle only through
an allow-list (plain containers, tensors, ``add_safe_globals``) unless the caller passes
``weights_only=False``; a refusal names the class it found and the flag. The same allow-list reads
PyTorch's archives (``_torch_objects.py``).
"""

from __future__ import annotations

import base64
import builtins
import collections
import io
import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._size import Size
from ._tensor import Tensor
from .record._recorder import RecordError

__all__ = [
    "WeightsOnlyError",
    "add_safe_globals",
    "dumps",
    "get_safe_globals",
    "loads",
    "refusal",
    "safe_globals",
]

#: the key of the pickle (base64) in a record's metadata
META_KEY = "pickle"

#: (module, name) -> object that any loader may build: what PyTorch's weights-only unpickler allows by default
_ALLOWED: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "Counter"): collections.Counter,
    ("collections", "defaultdict"): collections.defaultdict,
    ("ember._size", "Size"): Size,  # a shape (torch allows torch.Size)
    ("ember", "Size"): Size,
    **{(m, n): getattr(builtins, n) for m in ("builtins", "__builtin__")
       for n in ("set", "frozenset", "complex", "bytearray", "slice", "range", "list", "dict", "tuple", "int",
                 "float", "str", "bool", "bytes")},
}  # fmt: skip
_USER_SAFE: list[Any] = []


class WeightsOnlyError(RecordError, pickle.UnpicklingError):
    """A file holds a pickled object that only ``weights_only=False`` may load (PyTorch's consent rule)."""


def refusal(source: str, module: str, name: str) -> WeightsOnlyError:
    """The error for a global a weights-only load will not build, naming it and the flag."""
    return WeightsOnlyError(
        f"{source}: weights-only load refused the pickled global {module}.{name}: unpickling it could run code "
        "from the file. If you trust the file, pass weights_only=False to load; to allow this class alone, "
        f"use ember.serialization.add_safe_globals([{name}])"
    )


def allowed_global(module: str, name: str) -> Any | None:
    """The object a weights-only load may build for ``module.name``, or None."""
    hit = _ALLOWED.get((module, name))
    if hit is not None:
        return hit
    for obj in _USER_SAFE:
        if isinstance(obj, tuple):
            obj, path = obj
        else:
            path = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', ''))}"
        if path == f"{module}.{name}":
            return obj
    return None


# -- saving --------------------------------------------------------------------------------------------
class _Pickler(pickle.Pickler):
    """Tensors leave the pickle as persistent ids (index into ``tensors``); the record stores them."""

    def __init__(self, file: Any) -> None:
        super().__init__(file, protocol=4)
        self.tensors: list[Tensor] = []
        self._index: dict[int, int] = {}

    def persistent_id(self, obj: Any) -> Any:
        if not isinstance(obj, Tensor):
            return None
        i = self._index.get(id(obj))
        if i is None:
            i = self._index[id(obj)] = len(self.tensors)
            self.tensors.append(obj)
        return ("ember.tensor", i)


def dumps(obj: Any) -> tuple[str, list[Tensor]]:
    """``obj`` pickled (base64 text, for the record's metadata) and the tensors it refers to, in order."""
    buf = io.BytesIO()
    p = _Pickler(buf)
    try:
        p.dump(obj)
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        raise TypeError(f"save: cannot pickle an object of type {type(obj).__name__}: {e}") from None
    return base64.b64encode(buf.getvalue()).decode("ascii"), p.tensors


# -- loading -------------------------------------------------------------------------------------------
class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, tensors: list[Any], weights_only: bool, source: str) -> None:
        super().__init__(io.BytesIO(data))
        self.tensors, self.weights_only, self.source = tensors, weights_only, source

    def find_class(self, module: str, name: str) -> Any:
        hit = allowed_global(module, name)
        if hit is not None:
            return hit
        if self.weights_only:
            raise refusal(self.source, module, name)
        try:
            return super().find_class(module, name)
        except (ImportError, AttributeError) as e:
            raise RecordError(f"{self.source}: the pickled object needs {module}.{name}, which cannot be imported "
                              f"here ({e})") from None  # fmt: skip

    def persistent_load(self, pid: Any) -> Any:
        if isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "ember.tensor" and 0 <= pid[1] < len(self.tensors):
            return self.tensors[pid[1]]
        raise RecordError(f"{self.source}: the pickle refers to a tensor {pid!r} the file does not hold")


def loads(text: str, tensors: list[Any], weights_only: bool, source: str) -> Any:
    """Unpickle what ``dumps`` wrote; ``weights_only`` allows only plain containers and safe globals."""
    try:
        data = base64.b64decode(text.encode("ascii"), validate=True)
        return _Unpickler(data, tensors, weights_only, source).load()
    except (RecordError, pickle.UnpicklingError) as e:
        if isinstance(e, RecordError):
            raise
        raise RecordError(f"{source}: corrupted pickle ({e})") from None
    except (ValueError, EOFError, IndexError, KeyError) as e:
        raise RecordError(f"{source}: corrupted pickle ({type(e).__name__}: {e})") from None


# -- PyTorch's allow-list API ------------------------------------------------------------------------------
def add_safe_globals(safe_globals: list[Any]) -> None:
    """Let weights-only loads build these classes/functions (or ``(obj, "module.name")`` pairs), as PyTorch's."""
    for g in safe_globals:
        if g not in _USER_SAFE:
            _USER_SAFE.append(g)


def get_safe_globals() -> list[Any]:
    """What ``add_safe_globals`` allowed."""
    return list(_USER_SAFE)


def clear_safe_globals() -> None:
    """Forget every ``add_safe_globals`` entry."""
    _USER_SAFE.clear()


@contextmanager
def safe_globals(safe_globals: list[Any]) -> Iterator[None]:
    """Allow ``safe_globals`` for weights-only loads inside the block."""
    before = list(_USER_SAFE)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _USER_SAFE[:] = before
