"""The built-in optimizers: each a SimpleOptimizer (state + one step on arrays) wrapped by the adaptor.

Update rules follow ``torch.optim`` exactly (checked by the tests); Lion and LAMB follow their papers.
Steps update the parameter array in place where possible: SGD and Adam call their backend's fused update
kernels (``Backend.sgd_step``/``adam_step``: BLAS ``axpy``/``scal`` on NumPy, torch's fused
kernels on the torch backend).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .._tensor import Tensor
from .optimizer import OptimizerAdaptor, SimpleOptimizer

__all__ = ["LAMB", "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "Lion", "NAdam", "RAdam", "RMSprop"]


def _kernels(st: dict[str, Any], p: Any) -> Any:
    """The backend holding ``p`` (its fused update kernels); the adaptor records it in the state."""
    be = st.get("_backend")
    if be is None:
        from ..backends import backend_of

        be = backend_of(p)
    return be


def _wd(p: Any, g: Any, group: dict[str, Any]) -> Any:
    wd = group.get("weight_decay", 0)
    return g + wd * p if wd else g


def _decay(lr: float, p: Any, g: Any, group: dict[str, Any]) -> Any:
    """Weight decay as PyTorch's NAdam/RAdam apply it: ``p *= 1 - lr * wd`` when ``decoupled_weight_decay``, else
    ``wd * p`` added to the gradient."""
    wd = group.get("weight_decay", 0)
    if wd and group.get("decoupled_weight_decay"):
        p *= 1 - lr * wd
        return g
    return g + wd * p if wd else g


class _SGD(SimpleOptimizer):
    defaults: ClassVar[dict[str, Any]] = dict(
        lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False
    )

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        buf = _kernels(st, p).sgd_step(
            p, g, st.get("momentum_buffer"), lr, group["weight_decay"], group["momentum"], group["dampening"],
            group["nesterov"],
        )  # fmt: skip
        if buf is not None:
            st["momentum_buffer"] = buf
        return p, st

    many_kernel = "sgd_step_many"

    def step_many(
        self, lr: float, params: list[Any], grads: list[Any], states: list[dict[str, Any]], group: dict[str, Any],
        backend: Any,
    ) -> None:  # fmt: skip
        bufs = backend.sgd_step_many(
            params, grads, [st.get("momentum_buffer") for st in states], lr, group["weight_decay"], group["momentum"],
            group["dampening"], group["nesterov"],
        )  # fmt: skip
        for st, buf in zip(states, bufs, strict=True):
            if buf is not None:
                st["momentum_buffer"] = buf


def _scratch(st: dict[str, Any], p: Any) -> Any:
    """A reusable array shaped like ``p`` (state key ``_tmp``: kept between steps, never saved)."""
    t = st.get("_tmp")
    if t is None or t.shape != p.shape or t.dtype != p.dtype:
        t = st["_tmp"] = SimpleOptimizer.xp(p).empty_like(p)
    return t


class _Adam(SimpleOptimizer):
    defaults: ClassVar[dict[str, Any]] = dict(
        lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False
    )
    decoupled = False
    #: while a CUDA graph captures a step: per group (by id) its step count as a device tensor, else None
    device_steps: dict[int, Any] | None = None

    def init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        xp = self.xp(p)
        st = {"step": 0, "exp_avg": xp.zeros_like(p), "exp_avg_sq": xp.zeros_like(p)}
        if group["amsgrad"]:
            st["max_exp_avg_sq"] = xp.zeros_like(p)
        return st

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        b1, b2 = group["betas"]
        st["step"] += 1
        _kernels(st, p).adam_step(
            p, g, st["exp_avg"], st["exp_avg_sq"], st.get("max_exp_avg_sq"), _scratch(st, p), st["step"], lr, b1, b2,
            group["eps"], group["weight_decay"], self.decoupled or bool(group.get("decoupled_weight_decay")),
        )  # fmt: skip
        return p, st

    many_kernel = "adam_step_many"

    def step_many(
        self, lr: float, params: list[Any], grads: list[Any], states: list[dict[str, Any]], group: dict[str, Any],
        backend: Any,
    ) -> None:  # fmt: skip
        b1, b2 = group["betas"]
        for st in states:
            st["step"] += 1
        dev = self.device_steps  # a CUDA graph's capture: the step count is a device tensor (optim/_graph_step.py)
        steps = [st["step"] for st in states] if dev is None else [dev[id(group)]] * len(states)
        backend.adam_step_many(
            params, grads, [st["exp_avg"] for st in states], [st["exp_avg_sq"] for st in states],
            [st.get("max_exp_avg_sq") for st in states], steps, lr, b1, b2, group["eps"], group["weight_decay"],
            self.decoupled or bool(group.get("decoupled_weight_decay")),
        )  # fmt: skip


class _AdamW(_Adam):
    defaults: ClassVar[dict[str, Any]] = {**_Adam.defaults, "weight_decay": 1e-2, "decoupled_weight_decay": True}
    decoupled = True


class _NAdam(SimpleOptimizer):
    defaults: ClassVar[dict[str, Any]] = dict(
        lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3, maximize=False
    )

    def init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        xp = self.xp(p)
        return {"step": 0, "mu_product": 1.0, "exp_avg": xp.zeros_like(p), "exp_avg_sq": xp.zeros_like(p)}

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        xp = self.xp(p)
        b1, b2 = group["betas"]
        g = _decay(lr, p, g, group)
        st["step"] += 1
        t = st["step"]
        psi = group["momentum_decay"]
        mu = b1 * (1.0 - 0.5 * 0.96 ** (t * psi))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
        st["mu_product"] *= mu
        mp = st["mu_product"]
        m, v = st["exp_avg"], st["exp_avg_sq"]
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * g * g
        denom = xp.sqrt(v / (1 - b2**t)) + group["eps"]
        p -= lr * (1 - mu) / (1 - mp) * g / denom
        p -= lr * mu_next / (1 - mp * mu_next) * m / denom
        return p, st


class _RAdam(SimpleOptimizer):
    defaults: ClassVar[dict[str, Any]] = dict(
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        maximize=False,
    )

    def init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        xp = self.xp(p)
        return {"step": 0, "exp_avg": xp.zeros_like(p), "exp_avg_sq": xp.zeros_like(p)}

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        xp = self.xp(p)
        b1, b2 = group["betas"]
        g = _decay(lr, p, g, group)
        st["step"] += 1
        t = st["step"]
        m, v = st["exp_avg"], st["exp_avg_sq"]
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * g * g
        bc1, bc2 = 1 - b1**t, 1 - b2**t
        m_hat = m / bc1
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2**t / bc2
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p -= lr * rect * m_hat * (math.sqrt(bc2) / (xp.sqrt(v) + group["eps"]))
        else:
            p -= lr * m_hat
        return p, st


class _Adamax(SimpleOptimizer):
    defaults: ClassVar[dict[str, Any]] = dict(
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        maximize=False,
    )

    def init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        xp = self.xp(p)
        return {"step": 0, "exp_avg": xp.zeros_like(p), "exp_inf": xp.zeros_like(p)}

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        xp = self.xp(p)
        b1, b2 = group["betas"]
        g = _wd(p, g, group)
        st["step"] += 1
        m, u = st["exp_avg"], st["exp_inf"]
        m *= b1
        m += (1 - b1) * g
        u[...] = xp.maximum(u * b2, xp.abs(g) + group["eps"])
        p -= (lr / (1 - b1 ** st["step"])) * m / u
        return p, st


class _RMSprop(SimpleOptimizer):
    defaults: ClassVar[dict[str, Any]] = dict(
        lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, maximize=False
    )

    def init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        xp = self.xp(p)
        st: dict[str, Any] = {"step": 0, "square_avg": xp.zeros_like(p)}
        if group["momentum"] > 0:
            st["momentum_buffer"] = xp.zeros_like(p)
        if group["centered"]:
            st["grad_avg"] = xp.zeros_like(p)
        return st

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        xp = self.xp(p)
        a = group["alpha"]
        g = _wd(p, g, group)
        st["step"] += 1
        sq = st["square_avg"]
        sq *= a
        sq += (1 - a) * g * g
        if group["centered"]:
            ga = st["grad_avg"]
            ga *= a
            ga += (1 - a) * g
            avg = xp.sqrt(sq - ga * ga) + group["eps"]
        else:
            avg = xp.sqrt(sq) + group["eps"]
        if group["momentum"] > 0:
            buf = st["momentum_buffer"]
            buf *= group["momentum"]
            buf += g / avg
            p -= lr * buf
        else:
            p -= lr * g / avg
        return p, st


class _Adagrad(SimpleOptimizer):
    defaults: ClassVar[dict[str, Any]] = dict(
        lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10, maximize=False
    )

    def init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        xp = self.xp(p)
        return {"step": 0, "sum": xp.full_like(p, group["initial_accumulator_value"])}

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        xp = self.xp(p)
        g = _wd(p, g, group)
        st["step"] += 1
        clr = lr / (1 + (st["step"] - 1) * group["lr_decay"])
        st["sum"] += g * g
        p -= clr * g / (xp.sqrt(st["sum"]) + group["eps"])
        return p, st


class _Adadelta(SimpleOptimizer):
    defaults: ClassVar[dict[str, Any]] = dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False)

    def init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        xp = self.xp(p)
        return {"step": 0, "square_avg": xp.zeros_like(p), "acc_delta": xp.zeros_like(p)}

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        xp = self.xp(p)
        rho, eps = group["rho"], group["eps"]
        g = _wd(p, g, group)
        st["step"] += 1
        sq, acc = st["square_avg"], st["acc_delta"]
        sq *= rho
        sq += (1 - rho) * g * g
        delta = xp.sqrt(acc + eps) / xp.sqrt(sq + eps) * g
        acc *= rho
        acc += (1 - rho) * delta * delta
        p -= lr * delta
        return p, st


class _Lion(SimpleOptimizer):
    """Lion (Chen et al. 2023): the sign of an interpolated momentum, decoupled weight decay."""

    defaults: ClassVar[dict[str, Any]] = dict(lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, maximize=False)

    def init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "exp_avg": self.xp(p).zeros_like(p)}

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        xp = self.xp(p)
        b1, b2 = group["betas"]
        st["step"] += 1
        m = st["exp_avg"]
        p *= 1 - lr * group["weight_decay"]
        p -= lr * xp.sign(b1 * m + (1 - b1) * g)
        m *= b2
        m += (1 - b2) * g
        return p, st


class _LAMB(SimpleOptimizer):
    """LAMB (You et al. 2020): Adam's direction scaled per layer by the trust ratio ||p|| / ||update||."""

    defaults: ClassVar[dict[str, Any]] = dict(
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-6,
        weight_decay=0.0,
        maximize=False,
    )

    def init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        xp = self.xp(p)
        return {"step": 0, "exp_avg": xp.zeros_like(p), "exp_avg_sq": xp.zeros_like(p)}

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        xp = self.xp(p)
        b1, b2 = group["betas"]
        st["step"] += 1
        t = st["step"]
        m, v = st["exp_avg"], st["exp_avg_sq"]
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * g * g
        r = (m / (1 - b1**t)) / (xp.sqrt(v / (1 - b2**t)) + group["eps"]) + group["weight_decay"] * p
        pn, rn = xp.linalg.norm(p), xp.linalg.norm(r)  # kept on the device: no sync per parameter
        trust = xp.where((pn > 0) & (rn > 0), pn / xp.where(rn > 0, rn, 1.0), 1.0)
        p -= xp.astype(lr * trust, p.dtype) * r
        return p, st


#: PyTorch's implementation switches, as each of its optimizers takes them and keeps them in its param groups.
#: Ember's steps run their own kernels whatever ``foreach``/``fused``/``capturable`` say; ``differentiable=True``
#: (autograd through the step) is refused; ``decoupled_weight_decay`` changes the step (Adam, NAdam, RAdam).
_FLAG_DEFAULTS: dict[str, Any] = {
    "capturable": False, "decoupled_weight_decay": False, "differentiable": False, "foreach": None, "fused": None,
}  # fmt: skip
_FLAGS: dict[type[SimpleOptimizer], tuple[str, ...]] = {
    _SGD: ("differentiable", "foreach", "fused"),
    _Adam: ("capturable", "decoupled_weight_decay", "differentiable", "foreach", "fused"),
    _AdamW: ("capturable", "differentiable", "foreach", "fused"),
    _NAdam: ("capturable", "decoupled_weight_decay", "differentiable", "foreach"),
    _RAdam: ("capturable", "decoupled_weight_decay", "differentiable", "foreach"),
    _Adamax: ("capturable", "differentiable", "foreach"),
    _RMSprop: ("capturable", "differentiable", "foreach"),
    _Adagrad: ("differentiable", "foreach", "fused"),
    _Adadelta: ("capturable", "differentiable", "foreach"),
}
for _cls, _names in _FLAGS.items():
    _cls.defaults = {**_cls.defaults, **{n: _FLAG_DEFAULTS[n] for n in _names}}


def check_flags(name: str, opts: dict[str, Any]) -> None:
    """PyTorch's refusals of its implementation switches, and Ember's one (``differentiable=True``)."""
    if opts.get("fused") and opts.get("foreach"):
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if opts.get("differentiable"):
        raise RuntimeError(f"{name}: differentiable=True (autograd through the optimizer step) is not supported: "
                           "Ember's steps update the parameters in place, outside autograd")  # fmt: skip


class _Builtin(OptimizerAdaptor):
    """A built-in optimizer: the adaptor around one SimpleOptimizer, with PyTorch's constructor."""

    simple_cls: type[SimpleOptimizer]

    def __init__(self, params: Any, lr: float | None = None, **options: Any) -> None:
        if isinstance(lr, Tensor):  # PyTorch's tensor learning rate: its value (Ember's steps read a number)
            if lr.numel() != 1:
                raise ValueError(f"{type(self).__name__}: Tensor lr must be 1-element, got shape {tuple(lr.shape)}")
            lr = float(lr.item())
        if lr is not None:
            options["lr"] = lr
        check_flags(type(self).__name__, options)
        super().__init__(type(self).simple_cls(), params, **options)


class SGD(_Builtin):
    """Stochastic gradient descent (momentum, dampening, nesterov, weight_decay, maximize)."""

    simple_cls = _SGD


class Adam(_Builtin):
    """Adam (betas, eps, weight_decay as L2, amsgrad, maximize)."""

    simple_cls = _Adam


class AdamW(_Builtin):
    """Adam with decoupled weight decay (default 1e-2)."""

    simple_cls = _AdamW


class NAdam(_Builtin):
    """Adam with Nesterov momentum (momentum_decay)."""

    simple_cls = _NAdam


class RAdam(_Builtin):
    """Rectified Adam."""

    simple_cls = _RAdam


class Adamax(_Builtin):
    """Adam with the infinity norm."""

    simple_cls = _Adamax


class RMSprop(_Builtin):
    """RMSprop (alpha, centered, momentum)."""

    simple_cls = _RMSprop


class Adagrad(_Builtin):
    """Adagrad (lr_decay, initial_accumulator_value)."""

    simple_cls = _Adagrad


class Adadelta(_Builtin):
    """Adadelta (rho)."""

    simple_cls = _Adadelta


class Lion(_Builtin):
    """Lion: the sign of an interpolated momentum (Chen et al. 2023)."""

    simple_cls = _Lion


class LAMB(_Builtin):
    """LAMB: a layer-wise trust ratio on Adam's update (You et al. 2020)."""

    simple_cls = _LAMB
