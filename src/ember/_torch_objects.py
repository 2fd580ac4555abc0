"""PyTorch's zip archives (``torch.save``) read by Ember's own unpickler, without importing torch.

``weights_only=True`` (the default) builds only tensors, parameters and plain containers (and what
``add_safe_globals`` allows); anything else is refused, naming the class and the flag. With
``weights_only=False`` the whole object is rebuilt: PyTorch's names map to Ember's (``torch.nn.modules.
linear.Linear`` -> ``ember.nn.Linear``, ``torch.nn.functional.relu`` -> ``ember.nn.functional.relu``,
``torch.float32`` -> ``ember.float32``), other classes are imported as pickle does (a program run with
``torch`` aliased to Ember defines its modules on Ember's ``nn.Module``), and a module's PyTorch state
(``_parameters``/``_buffers``/``_modules`` and its plain attributes) is turned into the Ember module's.
A class that cannot be found is named in the error.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import zipfile
from typing import Any, ClassVar

import numpy as np

from ._dtype import DType
from ._errors import DeviceError, DTypeError
from ._pickled import allowed_global, refusal
from ._tensor import Tensor
from .record._recorder import RecordError

__all__ = ["load_torch_archive"]

_STORAGES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16, "LongStorage": np.int64,
    "IntStorage": np.int32, "ShortStorage": np.int16, "CharStorage": np.int8, "ByteStorage": np.uint8,
    "BoolStorage": np.bool_, "BFloat16Storage": np.uint16, "ComplexFloatStorage": np.complex64,
    "ComplexDoubleStorage": np.complex128,
}  # fmt: skip

#: torch.nn classes Ember names differently
_RENAMED = {"NonDynamicallyQuantizableLinear": "Linear"}

#: a PyTorch module's bookkeeping that has no Ember counterpart (hooks are functions: never restored)
_TORCH_INTERNALS = frozenset({
    "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set", "_backward_pre_hooks", "_backward_hooks",
    "_is_full_backward_hook", "_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
    "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_state_dict_hooks", "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks",
})  # fmt: skip


class _Storage:
    def __init__(self, dtype: Any, name: str) -> None:
        self.dtype, self.name = dtype, name


class _Stored:
    """One storage read from the archive: its elements and the device it was saved from."""

    def __init__(self, array: np.ndarray, location: str, bf16: bool) -> None:
        self.array, self.location, self.bf16 = array, location, bf16


def _tensor(stored: _Stored, offset: int, size: tuple[int, ...], stride: tuple[int, ...], place: Any) -> Tensor:
    from ._creation import from_numpy
    from .backends import get_backend

    a = stored.array
    item = a.itemsize
    if size and any(s > 0 for s in size) and (offset + sum((n - 1) * s for n, s in zip(size, stride)) >= len(a)):
        raise RecordError(f"a tensor of size {size} and strides {stride} reaches past its storage of {len(a)} items")
    view = np.lib.stride_tricks.as_strided(a[offset:], shape=size, strides=[s * item for s in stride])
    arr = np.array(view)
    if stored.bf16:
        be = get_backend(None)
        if be.supports_bfloat16:
            t = Tensor._make(be.bfloat16_from_bits(arr), be)
        else:
            t = from_numpy((arr.astype(np.uint32) << 16).view(np.float32))
    else:
        t = from_numpy(arr)
    return place(t, stored.location) if place is not None else t


class _ArchiveUnpickler(pickle._Unpickler):  # the Python unpickler: BUILD is overridden for modules
    dispatch: ClassVar[dict[int, Any]] = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]

    def __init__(self, file: Any, archive: zipfile.ZipFile, prefix: str, source: str, weights_only: bool,
                 place: Any) -> None:  # fmt: skip
        super().__init__(file)
        self.archive, self.prefix, self.source = archive, prefix, source
        self.weights_only, self.place = weights_only, place

    # -- globals
    def find_class(self, module: str, name: str) -> Any:
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return self._rebuild_tensor
        if module == "torch._utils" and name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
            return _rebuild_parameter
        if module == "torch._utils" and name == "_rebuild_meta_tensor_no_storage":
            return _rebuild_meta
        if module == "torch._tensor" and name == "_rebuild_from_type_v2":
            return _rebuild_from_type
        if module == "torch" and name in _STORAGES:
            return _Storage(_STORAGES[name], name)
        if module == "torch" and (name in ("Size", "device") or _is_dtype(name)):
            return _ember_global("torch", name)
        if (module in ("torch._tensor", "torch") and name == "Tensor") or module == "torch.nn.parameter":
            return _ember_global(module, name)
        hit = allowed_global(module, name)
        if hit is not None:
            return hit
        if self.weights_only:
            raise refusal(self.source, module, name)
        if module == "torch" or module.startswith("torch."):
            found = _ember_global(module, name)
            if found is None:
                raise RecordError(f"{self.source}: the file needs {module}.{name}, which Ember does not have")
            return found
        try:
            found = super().find_class(module, name)
        except (ImportError, AttributeError) as e:
            raise RecordError(f"{self.source}: the file needs the class {module}.{name}, which cannot be imported "
                              f"here ({e}); import or define it before loading") from None  # fmt: skip
        _refuse_real_torch_module(found, module, name, self.source)
        return found

    def persistent_load(self, pid: Any) -> Any:
        if not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage" or not isinstance(pid[1], _Storage):
            raise RecordError(f"{self.source}: unexpected persistent id {pid!r}")
        _, kind, key, location, _numel = pid
        try:
            raw = self.archive.read(f"{self.prefix}/data/{key}" if self.prefix else f"data/{key}")
        except KeyError:
            raise RecordError(f"{self.source}: the archive lacks storage {key!r}") from None
        dt = np.dtype(kind.dtype)
        if len(raw) % dt.itemsize:
            raise RecordError(f"{self.source}: storage {key!r} holds {len(raw)} bytes, not a multiple of {dt}")
        return _Stored(np.frombuffer(raw, dt), str(location), kind.name == "BFloat16Storage")

    def _rebuild_tensor(self, storage: Any, offset: int, size: Any, stride: Any, *args: Any) -> Tensor:
        if not isinstance(storage, _Stored):
            raise RecordError(f"{self.source}: a tensor refers to something that is not a storage")
        try:
            t = _tensor(storage, int(offset), tuple(size), tuple(stride), self.place)
        except RecordError as e:
            raise RecordError(f"{self.source}: {e}") from None
        if args and args[0] and t.dtype.is_floating_point:
            t.requires_grad = True
        return t

    # -- BUILD: a PyTorch module's state becomes an Ember module's
    def _load_build(self) -> None:
        from .nn.module import Module

        stack = self.stack  # type: ignore[attr-defined]
        state = stack.pop()
        inst = stack[-1]
        if isinstance(inst, Module) and isinstance(state, dict) and "_parameters" in state:
            stack[-1] = _module_from_torch_state(inst, state, self.source)
            return
        stack.append(state)
        pickle._Unpickler.load_build(self)  # type: ignore[attr-defined]

    dispatch[pickle.BUILD[0]] = _load_build  # type: ignore[assignment]


def _is_dtype(name: str) -> bool:
    return isinstance(getattr(importlib.import_module("ember"), name, None), DType)


def _rebuild_parameter(data: Tensor, requires_grad: bool = True, *args: Any) -> Tensor:
    from .nn.parameter import Param

    return Param(data.detach(), requires_grad=bool(requires_grad) and data.dtype.is_floating_point)


def _rebuild_meta(dtype: Any, size: Any, stride: Any, requires_grad: bool = False, *args: Any) -> Tensor:
    """A meta tensor PyTorch saved (its shape, strides and dtype; no data): on meta whatever ``map_location``, as
    PyTorch loads it."""
    from ._torch_names import empty_strided

    t = empty_strided(tuple(size), tuple(stride), dtype=dtype, device="meta")
    return t.requires_grad_(True) if requires_grad and t.dtype.is_floating_point else t


def _rebuild_from_type(func: Any, new_type: Any, args: Any, state: Any) -> Any:
    return func(*args)


def _ember_global(module: str, name: str) -> Any:
    """Ember's object for PyTorch's ``module.name``, or None (looked up by name, as pickle finds globals)."""
    ember = importlib.import_module("ember")
    name = _RENAMED.get(name, name)
    if module == "torch.nn.parameter":
        return {"Parameter": ember.nn.Param, "Buffer": ember.nn.Buffer}.get(name)
    if module == "torch" and name == "Size":
        return ember.Size
    candidates = ["ember" + module[len("torch"):]]  # fmt: skip
    if module.startswith("torch.nn.modules"):
        candidates.append("ember.nn")
    candidates.append("ember")
    for mod in candidates:
        try:
            found = getattr(importlib.import_module(mod), name, None)
        except ImportError:
            continue
        if found is not None:
            return found
    return None


def _refuse_real_torch_module(found: Any, module: str, name: str, source: str) -> None:
    import sys

    from .backends import real_torch

    torch = real_torch() if isinstance(found, type) and "torch" in sys.modules else None  # a subclass needs it loaded
    if torch is not None and issubclass(found, torch.nn.Module):
        raise RecordError(
            f"{source}: the class {module}.{name} is a PyTorch module here (it subclasses torch.nn.Module), so Ember "
            "cannot rebuild it; run the program with torch aliased to ember, or load its state_dict instead"
        )


def _module_from_torch_state(inst: Any, state: dict[str, Any], source: str) -> Any:
    """The Ember module for a PyTorch module's pickled ``__dict__`` (``inst`` was made by ``cls.__new__``)."""
    from .nn.module import Module

    params = {k: v for k, v in state["_parameters"].items()}
    buffers = dict(state.get("_buffers", {}))
    children = dict(state.get("_modules", {}))
    attrs = {k: v for k, v in state.items() if k not in _TORCH_INTERNALS}
    cls = type(inst)
    if cls.__module__.startswith("ember."):  # Ember's own class: its constructor sets its own fields
        built = _construct(cls, attrs, {**params, **buffers})
        if built is not None:
            inst = built
            ours = {k for d in (inst._params, inst._modules) for k, v in d.items() if v is not None}
            theirs = {k for d in (params, buffers, children) for k, v in d.items() if v is not None}
            if ours and ours != theirs:  # (a container's constructor makes no children: it takes the file's)
                raise RecordError(f"{source}: cannot rebuild {cls.__name__}: PyTorch's has {sorted(theirs)}, "
                                  f"Ember's {sorted(ours)}")  # fmt: skip
            inst._params.clear()
            inst._modules.clear()
            attrs = {"training": attrs.get("training", True)}
    if "_params" not in inst.__dict__:
        Module.__init__(inst)
    for k, v in attrs.items():
        object.__setattr__(inst, k, v)
    for k, v in params.items():
        inst.register_parameter(k, v if v is None else _as_param(v, buffer=False))
    persistent = set(state.get("_non_persistent_buffers_set", ()))
    for k, v in buffers.items():
        inst.register_buffer(k, v, persistent=k not in persistent)
    for k, v in children.items():
        inst.register_module(k, v)
    return inst


def _as_param(v: Tensor, buffer: bool) -> Any:
    from .nn.parameter import Param

    return v if isinstance(v, Param) else Param(v.detach(), requires_grad=v.requires_grad, is_buffer=buffer)


def _construct(cls: type, attrs: dict[str, Any], tensors: dict[str, Any]) -> Any:
    """``cls(**kwargs)`` from a PyTorch module's fields, or None when its constructor needs what they lack."""
    try:
        sig = inspect.signature(cls.__init__)  # type: ignore[misc]
    except (TypeError, ValueError):
        return None
    kwargs = {}
    for name, p in list(sig.parameters.items())[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or name in ("device", "dtype"):
            continue
        if name in attrs:
            kwargs[name] = attrs[name]
        elif name in tensors and isinstance(p.default, bool):
            kwargs[name] = tensors[name] is not None
        elif p.default is p.empty:
            return None
    try:
        return cls(**kwargs)
    except Exception:  # fields that do not fit the constructor: rebuild field by field instead
        return None


def _head(file: Any) -> bytes:
    """The first 4 bytes of a path or a seekable binary file."""
    if hasattr(file, "read"):
        file.seek(0)
        return bytes(file.read(4))
    with open(file, "rb") as f:
        return f.read(4)


def load_torch_archive(file: Any, source: str, weights_only: bool, place: Any = None) -> Any:
    """The object in a ``torch.save`` zip archive, with Ember tensors; ``place(tensor, saved_device)`` moves each."""
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError, EOFError):
        if _head(file) == b"PK\x03\x04":  # it starts as a zip: its directory (at the end) is cut or damaged
            raise RecordError(f"{source}: truncated or corrupt: not a complete zip archive") from None
        raise RecordError(f"{source}: not a PyTorch zip archive") from None
    with archive:
        pkl = [n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
        if not pkl:
            raise RecordError(f"{source}: no data.pkl in the archive")
        prefix = pkl[0].rsplit("/", 1)[0] if "/" in pkl[0] else ""
        try:
            with archive.open(pkl[0]) as f:
                return _ArchiveUnpickler(f, archive, prefix, source, weights_only, place).load()
        except (RecordError, DTypeError, DeviceError):  # the file is fine: where it is loaded cannot hold it
            raise
        except (pickle.UnpicklingError, EOFError, KeyError, zipfile.BadZipFile, ValueError, IndexError,
                TypeError) as e:  # fmt: skip
            raise RecordError(f"{source}: truncated or corrupt PyTorch archive ({type(e).__name__}: {e})") from None
