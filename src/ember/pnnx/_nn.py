"""Converters for PNNX's ``nn.*`` operators: ``nn.X`` builds ``ember.nn.X(**params)``.

A ``nn.X`` line carries ``torch.nn.X``'s constructor keywords as parameters and the module's parameters
and buffers as ``@`` attributes. Ember's modules keep PyTorch's constructors, so the rule (``_rule.py``)
builds every ``nn.X`` that ``ember.nn`` has; ``NN_EXCEPTIONS`` holds the few whose pnnx form differs.
After construction the loader replaces each named parameter with the file's array (``_graph.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .. import nn
from .._tensor import Tensor
from ._rule import RuleTable, module_builder

__all__ = ["NN_EXCEPTIONS", "NN_OPS", "Attribute"]


class Attribute(nn.Module):
    """``pnnx.Attribute``: a constant tensor of the graph (a folded buffer, grid or anchor table)."""

    def __init__(self) -> None:
        super().__init__()
        self.data: Any = None

    def forward(self) -> Tensor:
        return self.data


def _keep_dims(cls: type[nn.Module]) -> Callable[..., nn.Module]:
    """Adaptive pools: pnnx writes PyTorch's ``None`` (keep that dim) in ``output_size`` as 0."""

    def build(output_size: Any, **kw: Any) -> nn.Module:
        if isinstance(output_size, (list, tuple)):
            output_size = tuple(None if s == 0 else s for s in output_size)
        return module_builder(cls)(output_size=output_size, **kw)

    return build


class LSTM(nn.LSTM):
    """``nn.LSTM`` as pnnx wires it: the initial states ``h0``, ``c0`` are two separate inputs."""

    def forward(self, input: Tensor, h0: Tensor | None = None, c0: Tensor | None = None) -> Any:  # type: ignore[override]
        return super().forward(input, None if h0 is None else (h0, c0))


class MultiheadAttention(nn.MultiheadAttention):
    """``nn.MultiheadAttention`` as pnnx wires it: one input for self-attention, two for ``(query, key=value)``,
    then an optional attention mask."""

    def forward(self, *inputs: Tensor, **kw: Any) -> Any:  # type: ignore[override]
        if len(inputs) == 1:
            inputs = inputs * 3
        elif len(inputs) == 2:
            inputs = (inputs[0], inputs[1], inputs[1])
        q, k, v, *rest = inputs
        if rest:
            kw.setdefault("attn_mask", rest[0])
        return super().forward(q, k, v, **kw)


#: ``nn.*`` types whose pnnx form differs from ``ember.nn.X(**params)``.
NN_EXCEPTIONS: dict[str, Callable[..., nn.Module]] = {
    "pnnx.Attribute": Attribute,
    "nn.LSTM": module_builder(LSTM),
    "nn.MultiheadAttention": module_builder(MultiheadAttention),
    **{f"nn.Adaptive{kind}Pool{d}d": _keep_dims(getattr(nn, f"Adaptive{kind}Pool{d}d"))
       for kind in ("Avg", "Max") for d in (1, 2, 3) if hasattr(nn, f"Adaptive{kind}Pool{d}d")},
}  # fmt: skip


#: ``ember.nn`` classes that are not operators (containers, the base class)
_NOT_OPERATORS = frozenset({"Module", "Sequential", "ModuleList", "ModuleDict", "ParamList", "ParamDict",
                            "ParameterList", "ParameterDict", "Container"})  # fmt: skip


def _resolve(op_type: str) -> Callable[..., nn.Module] | None:
    name = op_type[3:]
    if not op_type.startswith("nn.") or name.startswith("_") or name in _NOT_OPERATORS:
        return None
    cls = getattr(nn, name, None)
    if isinstance(cls, type) and issubclass(cls, nn.Module):
        return module_builder(cls)
    return None


def _enumerate() -> Iterator[str]:
    return (f"nn.{n}" for n in dir(nn) if not n.startswith("_"))


#: ``nn.*`` operator type -> constructor taking the line's parameters as keywords.
NN_OPS = RuleTable(NN_EXCEPTIONS, _resolve, _enumerate)
