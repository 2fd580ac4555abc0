"""``Config``: serializable hyperparameters that build a module (spec: Config; Burn's ``#[derive(Config)]``).

Subclasses are dataclasses automatically::

    class MLPConfig(ember.Config):
        in_features: int
        hidden: int = 64
        out_features: int = 10

        def init(self, device=None, dtype=None):
            return MLP(self)

Every layer in ``ember.nn`` has one, generated from its constructor (``nn.LinearConfig(784, 10)``);
``init`` builds the module, ``init_with(record)`` builds it from saved parameters without random
initialisation. Configs nest: a field may hold another Config (or a list of them).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from pathlib import Path
from typing import Any, ClassVar

from ..record._atomic import atomic_write
from .init import skip_init

__all__ = ["Config", "config_for", "export_configs"]

_POSITIVE = (
    "features", "channels", "num_embeddings", "embedding_dim", "embed_dim", "hidden_size", "num_heads", "d_model",
    "nhead", "dim_feedforward", "num_layers", "input_size", "num_groups", "num_classes",
    # model configs: widths, sizes and counts (ember.models)
    "width", "hidden", "vocab_size", "block_size", "n_layer", "n_head", "n_embd", "image_size", "depth",
)  # fmt: skip
_REGISTRY: dict[str, type[Config]] = {}
#: the activation names a config may give (``nn/activation.py``, which defines them, fills this at import)
ACTIVATION_NAMES: set[str] = set()


@typing.dataclass_transform()
class Config:
    """Base of configs: a dataclass with JSON round-tripping, validation and ``init``."""

    #: the module class that ``init`` builds (set for generated layer configs)
    module: ClassVar[Any] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__dataclass_fields__" not in cls.__dict__:
            dataclasses.dataclass(cls)
        _REGISTRY[cls.__name__] = cls

    def __post_init__(self) -> None:
        self._check_fields()
        self.validate()

    # -- validation ---------------------------------------------------------------------------------
    def validate(self) -> None:
        """Override to add checks; raise ValueError naming the field."""

    def _check_fields(self) -> None:
        name = type(self).__name__
        try:
            hints = typing.get_type_hints(type(self))
        except Exception:  # an annotation that cannot be resolved: skip the type checks
            hints = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            want: Any = hints.get(f.name)
            simple: dict[Any, tuple[type, ...]] = {int: (int,), float: (int, float), bool: (bool,), str: (str,)}
            ok = simple.get(want)
            if ok is not None and (not isinstance(v, ok) or (want is not bool and isinstance(v, bool))):
                raise TypeError(f"{name}: {f.name} must be {want.__name__}, got {type(v).__name__} {v!r}")
            if isinstance(v, bool) or v is None:
                continue
            if f.name.endswith(_POSITIVE) or f.name in _POSITIVE or f.name.startswith("num_"):
                vals = v if isinstance(v, (tuple, list)) else (v,)
                if not all(isinstance(x, int) and x > 0 for x in vals):
                    what = "positive integers" if isinstance(v, (tuple, list)) else "a positive integer"
                    raise ValueError(f"{name}: {f.name} must be {what}, got {v!r}")
            elif f.name in ("kernel_size", "stride") and not isinstance(v, str):
                vals = v if isinstance(v, (tuple, list)) else (v,)
                if not all(isinstance(x, int) and x > 0 for x in vals):
                    raise ValueError(f"{name}: {f.name} must be positive, got {v!r}")
            elif f.name in ("p", "dropout") and isinstance(v, (int, float)) and not 0 <= v <= 1:
                raise ValueError(f"{name}: {f.name} must be in [0, 1], got {v!r}")
            elif f.name in ("eps", "momentum") and isinstance(v, (int, float)) and v < 0:
                raise ValueError(f"{name}: {f.name} must be non-negative, got {v!r}")
            elif f.name == "activation" and isinstance(v, str) and v not in ACTIVATION_NAMES:
                raise ValueError(f"{name}: unknown activation {v!r}; choose from {sorted(ACTIVATION_NAMES)}")

    # -- serialization ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Fields as plain JSON-able values; nested configs carry their class name."""
        out: dict[str, Any] = {"__config__": type(self).__name__}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            out[f.name] = _encode(getattr(self, f.name))
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        data = dict(data)
        kind = data.pop("__config__", cls.__name__)
        target = cls if kind == cls.__name__ else _REGISTRY.get(kind)
        if target is None or not issubclass(target, cls):
            raise ValueError(f"{cls.__name__}.from_dict: the data describes a {kind}, not a {cls.__name__}")
        hints = typing.get_type_hints(target)
        names = {f.name for f in dataclasses.fields(target)}  # type: ignore[arg-type]
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"{target.__name__}: unknown fields {sorted(unknown)}")
        kwargs = {k: _decode(v, hints.get(k)) for k, v in data.items()}
        return target(**kwargs)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> Config:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{cls.__name__}.from_json: invalid JSON ({e})") from None
        return cls.from_dict(data)

    def save(self, path: str | Path) -> None:
        """Write the config as JSON, atomically."""
        atomic_write(Path(path), self.to_json().encode())

    @classmethod
    def load(cls, path: str | Path) -> Config:
        p = Path(path)
        try:
            return cls.from_json(p.read_text())
        except ValueError as e:
            raise ValueError(f"{p}: {e}") from None

    def replace(self, **changes: Any) -> Config:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    # -- building modules ---------------------------------------------------------------------------
    def init(self, device: Any = None, dtype: Any = None) -> Any:
        """Build the module this config describes."""
        if self.module is None:
            raise TypeError(f"{type(self).__name__} does not say which module it builds; override init()")
        kwargs = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        params = inspect.signature(self.module.__init__).parameters
        if "device" in params:
            kwargs["device"] = device
        if "dtype" in params:
            kwargs["dtype"] = dtype
        m = self.module(**kwargs)
        if "device" not in params and (device is not None or dtype is not None):
            m.to(device=device, dtype=dtype)
        return m

    def init_with(self, record: Any, device: Any = None, dtype: Any = None) -> Any:
        """Build the module straight from saved parameters, skipping random initialisation."""
        with skip_init():
            m = self.init(device=device, dtype=dtype)
        m.load_record(record, assign=True)
        return m


def _encode(v: Any) -> Any:
    if isinstance(v, Config):
        return v.to_dict()
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _encode(x) for k, x in v.items()}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f"Config: cannot serialize a field of type {type(v).__name__}")


def _decode(v: Any, hint: Any) -> Any:
    if isinstance(v, dict) and "__config__" in v:
        kind = _REGISTRY.get(v["__config__"])
        if kind is None:
            raise ValueError(f"Config: unknown nested config {v['__config__']!r}")
        return kind.from_dict(v)
    if isinstance(v, list):
        items = [_decode(x, None) for x in v]
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if hint is tuple or origin is tuple or (args and any(typing.get_origin(a) is tuple for a in args)):
            return tuple(items)
        return items
    return v


def export_configs(namespace: dict[str, Any], classes: tuple[type, ...]) -> None:
    """Generate each class's config into a module's ``namespace`` and list it in its ``__all__``."""
    for cls in classes:
        cfg = config_for(cls)
        namespace[cfg.__name__] = cfg
        namespace["__all__"].append(cfg.__name__)


def config_for(module_cls: type, name: str | None = None) -> type[Config]:
    """Generate the Config dataclass of a layer from its constructor's signature."""
    sig = inspect.signature(module_cls.__init__)  # type: ignore[misc]
    fields: list[Any] = []
    for pname, p in list(sig.parameters.items())[1:]:
        if pname in ("device", "dtype") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        ann = p.annotation if p.annotation is not inspect.Parameter.empty else Any
        if p.default is inspect.Parameter.empty:
            fields.append((pname, ann))
        else:
            fields.append((pname, ann, dataclasses.field(default=p.default)))
    cls_name = name or f"{module_cls.__name__}Config"
    ns = {
        "module": module_cls,
        "__module__": module_cls.__module__,
        "__doc__": f"Config of :class:`{module_cls.__name__}`.",
    }
    cfg = dataclasses.make_dataclass(cls_name, fields, bases=(Config,), namespace=ns)
    _REGISTRY[cls_name] = cfg
    return cfg
