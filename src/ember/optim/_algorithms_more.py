"""More of ``torch.optim``'s algorithms, with its update rules (checked against it by the tests): Rprop, ASGD and
Adafactor."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._dtype import as_dtype, get_default_dtype
from .._torch_names import finfo
from ._algorithms import _FLAG_DEFAULTS, _Builtin, _wd
from .optimizer import SimpleOptimizer

__all__ = ["ASGD", "Adafactor", "Rprop"]


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


for _cls in (_Rprop, _ASGD):  # PyTorch's implementation switches (``_algorithms._FLAGS``)
    _cls.defaults = {**_cls.defaults, **{n: _FLAG_DEFAULTS[n] for n in ("capturable", "differentiable", "foreach")}}


class Rprop(_Builtin):
    """Resilient backpropagation: a step size per element, grown while the gradient keeps its sign (etas,
    step_sizes, maximize)."""

    simple_cls = _Rprop


class ASGD(_Builtin):
    """Averaged SGD (lambd, alpha, t0, weight_decay, maximize); the running average is the state's ``ax``."""

    simple_cls = _ASGD


def _lerp(start: Any, end: Any, weight: float) -> Any:
    """PyTorch's ``lerp``: from the nearer end, so that weight 1 gives ``end`` exactly."""
    return start + weight * (end - start) if weight < 0.5 else end - (end - start) * (1 - weight)


class _Adafactor(SimpleOptimizer):
    defaults: ClassVar[dict[str, Any]] = dict(
        lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, maximize=False, foreach=None
    )
    complex_params = False  # (as torch.optim.Adafactor)

    def init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        xp = self.xp(p)
        if p.ndim > 1:  # factored: a row and a column of second moments
            return {"step": 0.0, "row_var": xp.zeros((*p.shape[:-1], 1), dtype=p.dtype),
                    "col_var": xp.zeros((*p.shape[:-2], 1, p.shape[-1]), dtype=p.dtype)}  # fmt: skip
        return {"step": 0.0, "variance": xp.zeros_like(p)}

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        xp = self.xp(p)
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = float(finfo(as_dtype(str(p.dtype))).eps)  # (bfloat16 too)
        st["step"] += 1.0
        t = st["step"]
        one_minus_beta2 = t ** group["beta2_decay"]
        rho = min(lr, 1 / t**0.5)
        n = math.prod(p.shape)
        alpha = max(eps2, float(xp.sqrt(xp.sum(p * p))) / n**0.5) * rho
        if group["weight_decay"] != 0:
            p *= 1 - lr * group["weight_decay"]
        if g.ndim > 1:
            row_mean = xp.sqrt(xp.sum(g * g, axis=-1, keepdims=True)) ** 2 / g.shape[-1]
            st["row_var"][...] = _lerp(st["row_var"], row_mean, one_minus_beta2)
            col_mean = xp.sqrt(xp.sum(g * g, axis=-2, keepdims=True)) ** 2 / g.shape[-2]
            st["col_var"][...] = _lerp(st["col_var"], col_mean, one_minus_beta2)
            row_var = st["row_var"]
            var = xp.matmul(row_var, st["col_var"]) / xp.maximum(xp.mean(row_var, axis=-2, keepdims=True), eps1)
        else:
            st["variance"][...] = _lerp(st["variance"], g * g, one_minus_beta2)
            var = st["variance"]
        update = g / xp.sqrt(xp.maximum(var, eps1 * eps1))
        denom = max(1.0, float(xp.sqrt(xp.sum(update * update))) / (n**0.5 * group["d"]))
        p -= update * (alpha / denom)
        return p, st


class Adafactor(_Builtin):
    """Adafactor (PyTorch's ``torch.optim.Adafactor``): second moments factored into a row and a column for each
    matrix, a relative step size ``min(lr, 1/sqrt(t))`` scaled by the parameter's RMS, the update clipped to RMS
    ``d`` (beta2_decay, eps=(eps1, eps2), d, weight_decay, maximize)."""

    simple_cls = _Adafactor

    def __init__(self, params: Any, lr: float = 1e-2, beta2_decay: float = -0.8, eps: Any = (None, 1e-3),
                 d: float = 1.0, weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:  # fmt: skip
        if not lr >= 0.0:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not beta2_decay <= 0.0:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not eps[0] >= 0.0:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not eps[1] >= 0.0:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not d >= 1.0:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not weight_decay >= 0.0:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d, weight_decay=weight_decay,
                         foreach=foreach, maximize=maximize)  # fmt: skip
