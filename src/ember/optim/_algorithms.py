"""The built-in optimizers: each a SimpleOptimizer (state + one step on arrays) wrapped by the adaptor.

Update rules follow ``torch.optim`` exactly (checked by the tests); Lion and LAMB follow their papers.
Steps update the parameter array in place where possible: SGD and Adam use BLAS ``axpy``/``scal`` (threaded,
no temporaries) when SciPy is installed, NumPy in-place operations otherwise.
"""

from __future__ import annotations

import math
import os
from typing import Any, ClassVar

import numpy as np

from .optimizer import OptimizerAdaptor, SimpleOptimizer

__all__ = ["LAMB", "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "Lion", "NAdam", "RAdam", "RMSprop"]


_BLAS: Any = None  # None: not looked up yet; False: unavailable; else scipy.linalg.blas


def _scipy_blas() -> Any:
    """SciPy's BLAS module, set up so that it does not compete with NumPy's BLAS threads.

    SciPy wheels ship their own OpenBLAS. Its worker threads spinning beside NumPy's on a small machine
    make NumPy's matrix products markedly slower, so SciPy's copy is limited to one thread (with
    threadpoolctl); without threadpoolctl, or when that cannot be arranged, SciPy's BLAS is not used.
    """
    global _BLAS
    if _BLAS is None:
        _BLAS = False
        try:
            import numpy
            from scipy.linalg import blas
            from threadpoolctl import ThreadpoolController
        except ImportError:
            return None
        numpy_dir = os.path.dirname(numpy.__file__)
        for lib in ThreadpoolController().lib_controllers:
            # NumPy's own BLAS sits in numpy/ or numpy.libs/; only a separate copy is limited
            if lib.user_api == "blas" and not lib.filepath.startswith((numpy_dir, numpy_dir + ".libs")):
                lib.set_num_threads(1)
        _BLAS = blas
    return _BLAS or None


def _blas(y: Any) -> Any:
    """BLAS level-1 routines for ``y``'s dtype when SciPy is installed and ``y`` is a contiguous NumPy array."""
    if not isinstance(y, np.ndarray) or not y.flags.c_contiguous or y.dtype.char not in "fd":
        return None
    blas = _scipy_blas()
    if blas is None:
        return None
    return (blas.saxpy, blas.sscal) if y.dtype.char == "f" else (blas.daxpy, blas.dscal)


def _axpy(y: Any, a: float, x: Any) -> None:
    """``y += a * x`` in place, without a temporary (threaded BLAS when available)."""
    fns = _blas(y)
    if fns is not None and isinstance(x, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape:
        fns[0](np.ascontiguousarray(x).reshape(-1), y.reshape(-1), a=a)
    else:
        y += a * x


def _scal(y: Any, a: float) -> None:
    """``y *= a`` in place."""
    fns = _blas(y)
    if fns is not None:
        fns[1](a, y.reshape(-1))
    else:
        y *= a


def _wd(p: Any, g: Any, group: dict[str, Any]) -> Any:
    wd = group.get("weight_decay", 0)
    return g + wd * p if wd else g


class _SGD(SimpleOptimizer):
    defaults: ClassVar[dict[str, Any]] = dict(
        lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False
    )

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        g = _wd(p, g, group)
        mom = group["momentum"]
        if mom:
            buf = st.get("momentum_buffer")
            if buf is None:
                buf = self.xp(p).copy(g)
            else:
                _scal(buf, mom)
                _axpy(buf, 1 - group["dampening"], g)
            st["momentum_buffer"] = buf
            if group["nesterov"]:
                g = g + mom * buf
            else:
                g = buf
        _axpy(p, -lr, g)
        return p, st


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

    def init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        xp = self.xp(p)
        st = {"step": 0, "exp_avg": xp.zeros_like(p), "exp_avg_sq": xp.zeros_like(p)}
        if group["amsgrad"]:
            st["max_exp_avg_sq"] = xp.zeros_like(p)
        return st

    def step(self, lr: float, p: Any, g: Any, st: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any]:
        xp = self.xp(p)
        b1, b2 = group["betas"]
        wd = group["weight_decay"]
        if self.decoupled:
            _scal(p, 1 - lr * wd)
        elif wd:
            g = g + wd * p
        st["step"] += 1
        t = st["step"]
        m, v, tmp = st["exp_avg"], st["exp_avg_sq"], _scratch(st, p)
        _scal(m, b1)
        _axpy(m, 1 - b1, g)
        _scal(v, b2)
        xp.square(g, out=tmp)
        _axpy(v, 1 - b2, tmp)
        bc1, bc2 = 1 - b1**t, 1 - b2**t
        if group["amsgrad"]:
            st["max_exp_avg_sq"][...] = xp.maximum(st["max_exp_avg_sq"], v)
            v = st["max_exp_avg_sq"]
        xp.sqrt(v, out=tmp)
        tmp *= 1 / math.sqrt(bc2)
        tmp += group["eps"]
        xp.divide(m, tmp, out=tmp)
        _axpy(p, -lr / bc1, tmp)
        return p, st


class _AdamW(_Adam):
    defaults: ClassVar[dict[str, Any]] = {**_Adam.defaults, "weight_decay": 1e-2}
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
        g = _wd(p, g, group)
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
        g = _wd(p, g, group)
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


class _Builtin(OptimizerAdaptor):
    """A built-in optimizer: the adaptor around one SimpleOptimizer, with PyTorch's constructor."""

    simple_cls: type[SimpleOptimizer]

    def __init__(self, params: Any, lr: float | None = None, **options: Any) -> None:
        if lr is not None:
            options["lr"] = lr
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
