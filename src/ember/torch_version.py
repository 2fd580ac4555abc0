"""``torch.torch_version``: ``TorchVersion``, a version string that compares as a version (``"2.13.0" >= "2.2"``),
and ``TORCH_API``, the PyTorch release whose API Ember follows (its tests run beside that torch)."""

from __future__ import annotations

import re
from typing import Any

from ._version import __version__ as _ember_version

__all__ = ["TORCH_API", "TorchVersion", "torch_alias_version"]

#: the PyTorch release whose API Ember follows and is tested against (``pip install torch==2.13.0``)
TORCH_API = "2.13.0"


def _key(v: Any) -> Any:
    text = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    try:
        from packaging.version import Version

        return Version(text)
    except ImportError:  # (no packaging: the release numbers, then whether it is a final release)
        release, _, rest = text.partition("+")[0].partition("-")
        m = re.match(r"^v?(\d+(?:\.\d+)*)(.*)$", release)
        if m is None:
            raise ValueError(f"TorchVersion: cannot read {text!r} as a version") from None
        nums = tuple(int(n) for n in m.group(1).split("."))
        return (nums + (0,) * (4 - len(nums)), m.group(2) == "" and not rest)


class TorchVersion(str):
    """A version string whose comparisons with strings and tuples are version comparisons (PEP 440)."""

    def _cmp(self, other: Any, op: str) -> bool:
        a, b = _key(self), _key(other)
        return bool(getattr(a, op)(b))

    def __lt__(self, other: Any) -> bool:
        return self._cmp(other, "__lt__")

    def __le__(self, other: Any) -> bool:
        return self._cmp(other, "__le__")

    def __gt__(self, other: Any) -> bool:
        return self._cmp(other, "__gt__")

    def __ge__(self, other: Any) -> bool:
        return self._cmp(other, "__ge__")

    def __eq__(self, other: Any) -> bool:
        try:
            return self._cmp(other, "__eq__")
        except Exception:  # (not a version: compared as text)
            return str.__eq__(self, other)

    def __ne__(self, other: Any) -> bool:
        return not self == other

    __hash__ = str.__hash__


def torch_alias_version() -> TorchVersion:
    """``torch.__version__`` where ``torch`` is Ember (``ember.as_torch``): the PyTorch API release, with Ember's
    version as its local label (``2.13.0+ember.0.1.0``), so version checks in libraries pass as for that torch."""
    return TorchVersion(f"{TORCH_API}+ember.{_ember_version}")
