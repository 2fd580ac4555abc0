"""Likelihood losses: Gaussian and Poisson negative log-likelihoods, CTC, and the adaptive softmax."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor
from ..ops import cat, where
from . import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .loss import _Loss
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss", "CTCLoss", "GaussianNLLLoss", "PoissonNLLLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class GaussianNLLLoss(_Loss):
    """``0.5 (log var + (input - target)^2 / var)`` (+ ``0.5 log 2 pi`` with ``full``)."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var: Any) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood with rate ``exp(input)`` (``log_input``) or ``input``."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average: Any = None, eps: float = 1e-8,
                 reduce: Any = None, reduction: str = "mean") -> None:  # fmt: skip
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(log_input, target, self.log_input, self.full, eps=self.eps, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist Temporal Classification loss (see ``F.ctc_loss``)."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(None, None, reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any) -> Tensor:
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)  # fmt: skip


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax over many classes (Grave et al.): frequent classes (below ``cutoffs[0]``) in the head,
    the rest in clusters reached through the head, each cluster projected to ``in_features / div_value ** (i+1)``.

    ``forward(input, target)`` returns ``(output, loss)``: the target log-probabilities and their negative mean.
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
                 head_bias: bool = False, device: Any = None, dtype: Any = None) -> None:  # fmt: skip
        super().__init__()
        cut = list(cutoffs)
        if not cut or cut != sorted(set(cut)) or min(cut) <= 0 or max(cut) > n_classes - 1 or any(
                int(c) != c for c in cut):  # fmt: skip
            raise ValueError("AdaptiveLogSoftmaxWithLoss: cutoffs must be a sorted sequence of unique positive "
                             f"integers below n_classes - 1, got {cutoffs!r}")  # fmt: skip
        self.in_features, self.n_classes, self.div_value, self.head_bias = in_features, n_classes, div_value, head_bias
        self.cutoffs = cut + [n_classes]
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw), Linear(hsz, osz, bias=False, **kw)))

    def forward(self, input: Tensor, target: Tensor) -> Any:
        if target.ndim not in (0, 1) or input.ndim != target.ndim + 1:
            raise ValueError(f"AdaptiveLogSoftmaxWithLoss: expected input (N, {self.in_features}) with target (N), "
                             f"or ({self.in_features}) with a 0-d target; got {tuple(input.shape)} and "
                             f"{tuple(target.shape)}")  # fmt: skip
        batched = target.ndim == 1
        x = input if batched else input.unsqueeze(0)
        t = target if batched else target.unsqueeze(0)
        if x.shape[0] != t.shape[0]:
            raise ValueError("AdaptiveLogSoftmaxWithLoss: input and target have different batch sizes")
        if bool(((t < 0) | (t >= self.n_classes)).any()):
            raise ValueError(f"AdaptiveLogSoftmaxWithLoss: target values must be in [0, {self.n_classes - 1}]")
        head = F.log_softmax(self.head(x), 1)
        output = head.gather(1, t.clamp(max=self.shortlist_size - 1).unsqueeze(1)).squeeze(1)
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            inside = (t >= low) & (t < high)
            local = F.log_softmax(self.tail[i](x), 1).gather(1, (t - low).clamp(0, high - low - 1).unsqueeze(1))
            output = where(inside, head[:, self.shortlist_size + i] + local.squeeze(1), output)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of every class: (N, n_classes) (or (n_classes) for one input)."""
        x = input if input.ndim == 2 else input.unsqueeze(0)
        head = F.log_softmax(self.head(x), 1)
        parts = [head[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            parts.append(
                F.log_softmax(self.tail[i](x), 1) + head[:, self.shortlist_size + i : self.shortlist_size + i + 1]
            )
        out = cat(parts, 1)
        return out if input.ndim == 2 else out.squeeze(0)

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each input."""
        return self.log_prob(input).argmax(-1)
