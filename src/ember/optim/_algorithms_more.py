"""More of ``torch.optim``'s algorithms, with its update rules (checked against it by the tests): Rprop and ASGD."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .._dtype import get_default_dtype
from ._algorithms import _Builtin, _wd
from .optimizer import SimpleOptimizer

__all__ = ["ASGD", "Rprop"]


class _Rprop(SimpleOptimizer):
    defaults: ClassVar[dict[str, Any]] = dict(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50.0), maximize=False)

    def init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        xp = self.xp(p)
        return {"step": 0, "prev": xp.zeros_like(p), "step_size": xp.full_like(p, group["lr"])}

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        xp = self.xp(p)
        eta_minus, eta_plus = group["etas"]
        low, high = group["step_sizes"]
        st["step"] += 1
        s = xp.sign(g * st["prev"])
        size = st["step_size"]
        one = xp.full_like(size, 1.0)  # (the factors in the step sizes' dtype: a bare 1.2 is float32 to torch's where)
        size[...] = xp.clip(size * xp.where(s > 0, one * eta_plus, xp.where(s < 0, one * eta_minus, one)), low, high)
        g = xp.where(s < 0, 0, g)  # a sign change: no step, and it is forgotten
        p -= xp.sign(g) * size
        st["prev"][...] = g
        return p, st


def _scalar(v: float) -> float:
    """``v`` rounded to the default dtype, as PyTorch keeps ASGD's ``eta`` and ``mu`` (0-d tensors of it)."""
    return float(np.asarray(v, dtype=get_default_dtype().name))


class _ASGD(SimpleOptimizer):
    defaults: ClassVar[dict[str, Any]] = dict(lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, maximize=False)

    def init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "eta": _scalar(group["lr"]), "mu": 1.0, "ax": self.xp(p).zeros_like(p)}

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        g = _wd(p, g, group)
        st["step"] += 1
        eta, mu, lambd = st["eta"], st["mu"], group["lambd"]
        p *= 1 - lambd * eta
        p -= eta * g
        ax = st["ax"]
        if mu != 1:
            ax += (p - ax) * mu
        else:
            ax[...] = p
        st["eta"] = _scalar(lr / (1 + lambd * lr * st["step"]) ** group["alpha"])
        st["mu"] = _scalar(1 / max(1, st["step"] - group["t0"]))
        return p, st


class Rprop(_Builtin):
    """Resilient backpropagation: a step size per element, grown while the gradient keeps its sign (etas,
    step_sizes, maximize)."""

    simple_cls = _Rprop


class ASGD(_Builtin):
    """Averaged SGD (lambd, alpha, t0, weight_decay, maximize); the running average is the state's ``ax``."""

    simple_cls = _ASGD
