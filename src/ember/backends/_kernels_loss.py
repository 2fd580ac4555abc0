"""Loss kernels (reference implementation against ``self.xp``, shared by NumPy and CuPy; torch overrides them).

``nll_loss``/``nll_loss_backward`` are PyTorch's ``nll_loss_forward``/``nll_loss_backward`` pair: the negative
log-likelihood of class indices over (M, C) log-probabilities, with class weights, an ignored index and the
reduction inside one kernel each, so that ``cross_entropy`` is four kernels a step (log-softmax and this pair,
forward and backward) on every backend. The target's range is checked above the backend (``nll_loss`` in
``nn.functional``), where the host knows it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: the reductions, in PyTorch's ``at::Reduction`` numbering (what its kernels take)
REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


class LossKernels:
    """The negative log-likelihood pair. Mixed into ``Backend``."""

    xp: Any

    def nll_loss(self, logp: Any, target: Any, weight: Any, reduction: str, ignore_index: int) -> tuple[Any, Any]:
        """``(loss, total_weight)`` of log-probabilities ``logp`` (M, C) at int64 ``target`` (M,), all in range or
        ``ignore_index``: per sample ``-weight[t] * logp[n, t]`` (0 where ignored; ``weight`` (C,) in ``logp``'s
        dtype, or None for ones), summed for 'sum' and 'mean', and for 'mean' divided by ``total_weight``, the
        sum of the weights of the targets not ignored (a 0-d array; 0/0 is NaN, as in PyTorch)."""
        xp = self.xp
        dtype = logp.dtype
        if xp is np and weight is None and ignore_index < 0 and (target.size == 0 or target.min() >= 0):
            # the usual case on the host (nothing weighed or ignored): no mask, no select
            picked = np.take_along_axis(logp, target[:, None], axis=1)[:, 0]
            total = np.asarray(target.shape[0], dtype=dtype)
            valid = None
        else:
            valid = target != ignore_index
            safe = xp.where(valid, target, 0)
            picked = xp.take_along_axis(logp, safe[:, None], axis=1)[:, 0]
            w = valid.astype(dtype) if weight is None else xp.where(valid, weight[safe], xp.zeros((), dtype))
            if weight is not None:
                picked = picked * w
            # ignored rows are selected out, not multiplied by 0: their log-probability may be -inf
            picked = xp.where(valid, picked, xp.zeros((), dtype))
            total = xp.sum(w)
        if reduction == "none":
            return -picked, total
        loss = -xp.sum(picked)
        if reduction == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):  # every target ignored, or none: NaN, silently
                loss = loss / total
        return xp.astype(xp.asarray(loss), dtype, copy=False), total

    def nll_loss_backward(
        self, g: Any, logp: Any, target: Any, weight: Any, reduction: str, ignore_index: int, total_weight: Any
    ) -> Any:
        """The gradient of :meth:`nll_loss` with respect to ``logp`` for the loss's gradient ``g`` ((M,) for
        'none', 0-d otherwise): ``-g[n] * weight[t] / total_weight`` (the division for 'mean') at ``[n, t]`` of
        each sample not ignored, 0 elsewhere (only ``logp``'s shape and dtype are read)."""
        xp = self.xp
        m, c = logp.shape
        out = xp.zeros((m, c), dtype=logp.dtype)
        if m == 0:
            return out
        valid = target != ignore_index
        safe = xp.where(valid, target, 0)
        gv = -g
        if reduction == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                gv = gv / total_weight
        gv = xp.broadcast_to(xp.astype(gv, logp.dtype, copy=False), (m,))
        if weight is not None:
            gv = gv * weight[safe]
        gv = xp.where(valid, gv, xp.zeros((), logp.dtype))
        xp.put_along_axis(out, safe[:, None], gv[:, None], axis=1)
        return out
