"""Loss modules (PyTorch's ``nn.CrossEntropyLoss`` and friends) over ``ember.nn.functional``."""

from __future__ import annotations

import dataclasses
from typing import Any

from .._tensor import Tensor
from . import functional as F
from .functional._basic import legacy_reduction
from .module import Module

__all__ = [
    "BCELoss", "BCEWithLogitsLoss", "CosineEmbeddingLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss", "L1Loss",
    "LinearCrossEntropyLoss", "LinearCrossEntropyOptions", "MSELoss", "MarginRankingLoss", "NLLLoss", "NLLLoss2d",
    "SmoothL1Loss",
]  # fmt: skip


class _Loss(Module):
    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__()
        reduction = legacy_reduction(size_average, reduce, reduction)
        if reduction not in ("none", "mean", "sum", "batchmean"):
            raise ValueError(f"{type(self).__name__}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction='{self.reduction}'" if self.reduction != "mean" else ""


class _Weighted(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:  # fmt: skip
        super().__init__(size_average, reduce, reduction)
        if weight is not None:
            self.register_buffer("weight", weight)
        else:
            self.weight = None


class CrossEntropyLoss(_Weighted):
    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: Any = None,
        ignore_index: int = -100,
        reduce: Any = None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"CrossEntropyLoss: label_smoothing must be in [0, 1], got {label_smoothing}")
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(
            input,
            target,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_Weighted):
    def __init__(self, weight: Tensor | None = None, size_average: Any = None, ignore_index: int = -100,
                 reduce: Any = None, reduction: str = "mean") -> None:  # fmt: skip
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """``NLLLoss`` (PyTorch's older name for images)."""


class BCELoss(_Weighted):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Weighted):
    def __init__(self, weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean", pos_weight: Tensor | None = None) -> None:  # fmt: skip
        super().__init__(weight, size_average, reduce, reduction)
        if pos_weight is not None:
            self.register_buffer("pos_weight", pos_weight)
        else:
            self.pos_weight = None

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )


class MSELoss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean", beta: float = 1.0
                 ) -> None:  # fmt: skip
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(None, None, reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, self.reduction, self.delta)


class KLDivLoss(_Loss):
    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 log_target: bool = False) -> None:  # fmt: skip
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_Loss):
    def __init__(self, margin: float = 0.0, size_average: Any = None, reduce: Any = None, reduction: str = "mean"
                 ) -> None:  # fmt: skip
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, self.margin, reduction=self.reduction)


class MarginRankingLoss(CosineEmbeddingLoss):
    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, self.margin, reduction=self.reduction)


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """PyTorch's settings of a chunked ``linear_cross_entropy`` (batch chunks, accumulation policy and dtype), checked
    as PyTorch checks them. Ember computes the loss in one piece: chunking changes memory use, not the result."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: Any = None

    def __post_init__(self) -> None:
        from .._dtype import as_dtype

        if self.acc_policy not in ("auto", "accurate", "balanced", "compact"):
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r} (auto, accurate, balanced or compact)")
        if self.chunking_method not in (None, "auto"):
            name, _, factor = str(self.chunking_method).partition(":")
            if name != "aspect_ratio" or not (factor or "1").isdigit() or int(factor or "1") < 1:
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r} ('auto' or 'aspect_ratio[:k]')")
        size = self.batch_chunk_size
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
            raise ValueError(f"batch_chunk_size must be a positive int or None, got {size!r}")
        if self.acc_dtype is not None and as_dtype(self.acc_dtype).name not in (
            "float16", "bfloat16", "float32", "float64"
        ):  # fmt: skip
            raise ValueError(f"acc_dtype must be None or a floating dtype of 16 to 64 bits, got {self.acc_dtype!r}")


class LinearCrossEntropyLoss(Module):
    """A ``Linear`` layer (``linear``: in_features -> C * prod(out_features)) followed by the cross entropy of its
    logits, as one loss (``F.linear_cross_entropy``)."""

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple[int, ...] = (), bias: bool = False,
                 device: Any = None, dtype: Any = None, reduction: str = "mean", weight: Tensor | None = None,
                 ignore_index: int | None = None, label_smoothing: float = 0.0,
                 options: Any = None) -> None:  # fmt: skip
        super().__init__()
        from .linear import Linear

        self.num_classes, self.out_features = num_classes, tuple(out_features)
        self.reduction, self.ignore_index, self.label_smoothing, self.options = (
            reduction,
            ignore_index,
            label_smoothing,
            options,
        )
        size = num_classes
        for d in self.out_features:
            size *= d
        self.linear = Linear(in_features, size, bias=bias, device=device, dtype=dtype)
        if weight is not None:
            self.register_buffer("weight", weight)
        else:
            self.weight = None

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        w = self.linear.weight.reshape(self.num_classes, *self.out_features, self.linear.in_features)
        b = self.linear.bias.reshape(self.num_classes, *self.out_features) if self.linear.bias is not None else None
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index, label_smoothing=self.label_smoothing,
                                      options=self.options)  # fmt: skip
