"""``ember.ops.<namespace>.<name>`` (PyTorch's ``torch.ops``): the custom operators ``ember.library.custom_op``
defines, found by namespace and name."""

from __future__ import annotations

from typing import Any

#: every custom operator (an ``ember.library.CustomOpDef``) by namespace, then name
CUSTOM_OPS: dict[str, dict[str, Any]] = {}


class OpNamespace:
    """``ember.ops.<namespace>``: the custom operators of one namespace, by name."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"ember.ops.{self._name}"

    def __getattr__(self, name: str) -> Any:
        try:
            return CUSTOM_OPS[self._name][name]
        except KeyError:
            raise AttributeError(f"'_OpNamespace' '{self._name}' object has no attribute '{name}'") from None
