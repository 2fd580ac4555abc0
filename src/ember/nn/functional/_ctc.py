"""``ctc_loss``: Connectionist Temporal Classification, by the forward (alpha) recursion in log space.

The recursion is written with Ember operations over all sequences and label positions at once (one
step per time step), so autodiff gives the gradient. States that cannot be reached hold a large
negative number instead of -inf, so that no 0/0 appears in the gradient of the log-sum-exp.
"""

from __future__ import annotations

from typing import Any

from ..._creation import arange, full, tensor
from ..._errors import ShapeError, ValueRangeError
from ..._tensor import Tensor
from ...ops import cat, logsumexp, stack, where

__all__ = ["ctc_loss"]

_NEG = -1e30  # "log 0": finite, so exp(x - max) stays 0 and gradients stay finite
_IMPOSSIBLE = -1e29


def _lengths(v: Any, n: int, what: str) -> list[int]:
    out = [int(x) for x in (v.tolist() if isinstance(v, Tensor) else ([v] if isinstance(v, int) else list(v)))]
    if len(out) != n:
        raise ShapeError(f"ctc_loss: {what} has {len(out)} entries for a batch of {n}")
    return out


def ctc_loss(
    log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0,
    reduction: str = "mean", zero_infinity: bool = False,
) -> Tensor:  # fmt: skip
    """``-log p(target | input)`` summed over all alignments. ``log_probs`` is (T, N, C) or (T, C) (log-softmax
    output); ``targets`` is (N, S) padded or 1-d concatenated; ``"mean"`` divides each loss by its target
    length before averaging over the batch, as PyTorch."""
    batched = log_probs.ndim == 3
    if log_probs.ndim not in (2, 3):
        raise ShapeError(f"ctc_loss: log_probs must be (T, N, C) or (T, C), got shape {tuple(log_probs.shape)}")
    if not log_probs.dtype.is_floating_point:
        raise ValueRangeError(f"ctc_loss: log_probs must be floating point, got {log_probs.dtype}")
    lp = log_probs if batched else log_probs.unsqueeze(1)
    t_max, n, c = lp.shape
    if not 0 <= blank < c:
        raise ValueRangeError(f"ctc_loss: blank {blank} is not a class of the {c} in log_probs")
    in_len = _lengths(input_lengths, n, "input_lengths")
    tg_len = _lengths(target_lengths, n, "target_lengths")
    if any(t > t_max or t < 0 for t in in_len):
        raise ValueRangeError(f"ctc_loss: input_lengths {in_len} must be in [0, {t_max}]")
    tg = targets.tolist()
    if targets.ndim == 2:  # (N, S) padded
        rows = [list(tg[i])[: tg_len[i]] for i in range(n)]
    else:  # 1-d: the targets of the batch concatenated (or the one sequence's)
        flat = tg if targets.ndim == 1 else [tg]
        if sum(tg_len) > len(flat):
            raise ShapeError(f"ctc_loss: target_lengths sum to {sum(tg_len)} but targets hold {len(flat)} labels")
        starts = [sum(tg_len[:i]) for i in range(n)]
        rows = [flat[s : s + k] for s, k in zip(starts, tg_len)]
    s_max = 2 * max((len(r) for r in rows), default=0) + 1
    ext = [[blank] * s_max for _ in rows]  # blank, l1, blank, l2, ..., blank
    skip = [[False] * s_max for _ in rows]  # may state s be reached from s - 2 (a label unlike the previous one)
    for i, r in enumerate(rows):
        for k, lab in enumerate(r):
            ext[i][2 * k + 1] = int(lab)
            skip[i][2 * k + 1] = k > 0 and r[k - 1] != lab
    dev = lp.device
    ext_t = tensor(ext, device=dev)  # (N, S)
    can_skip = tensor(skip, device=dev)
    emit = lp.gather(2, ext_t.unsqueeze(0).expand(t_max, n, s_max))  # (T, N, S): log p(ext[s]) at time t
    neg = full((n, 1), _NEG, device=dev, dtype=lp.dtype)
    neg2 = full((n, 2), _NEG, device=dev, dtype=lp.dtype)
    s_idx = arange(s_max, device=dev)
    alpha = where(s_idx < 2, emit[0], _NEG)
    ends = [alpha]
    for t in range(1, t_max):
        a1 = cat([neg, alpha[:, :-1]], 1)
        a2 = where(can_skip, cat([neg2, alpha[:, :-2]], 1), _NEG)
        alpha = logsumexp(stack([alpha, a1, a2], 0), 0) + emit[t]
        ends.append(alpha)
    lens = tensor([max(k, 1) - 1 for k in in_len], device=dev)
    final = stack(ends, 0).gather(0, lens.reshape(1, n, 1).expand(1, n, s_max)).reshape(n, s_max)
    last = tensor([2 * len(r) for r in rows], device=dev).reshape(n, 1)
    picks = stack([final.gather(1, last), final.gather(1, (last - 1).clamp(min=0))], 0).reshape(2, n)
    picks = where(tensor([[True] * n, [len(r) > 0 for r in rows]], device=dev), picks, _NEG)
    ll = logsumexp(picks, 0)
    empty_in = tensor([k == 0 for k in in_len], device=dev)  # no frames: probability 1 for an empty target, else 0
    ll = where(empty_in, where(tensor([len(r) == 0 for r in rows], device=dev), 0.0, _NEG), ll)
    impossible = ll < _IMPOSSIBLE
    loss = where(impossible, float("inf"), -ll)
    if zero_infinity:
        loss = where(impossible, 0.0, loss)
    if not batched:
        loss = loss.reshape(())
    if reduction == "mean":
        div = tensor([max(k, 1) for k in tg_len], device=dev, dtype=loss.dtype)
        return (loss / (div if batched else div.reshape(()))).mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueRangeError(f"ctc_loss: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
