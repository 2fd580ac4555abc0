"""PyTorch's hook-based reparametrizations of a weight: ``weight_norm`` (``w = g * v / ||v||``) and
``spectral_norm`` (``w = w_orig / sigma(w_orig)``, ``sigma`` by power iteration). Each replaces the parameter by
its parts, under PyTorch's names (``weight_g``/``weight_v``; ``weight_orig`` with the buffers ``weight_u`` and
``weight_v``), and recomputes the weight in a forward pre-hook, so state dicts load from PyTorch as they are."""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

from ..._tensor import Tensor
from ...autograd._grad_mode import no_grad
from ...ops import mv
from ..functional import normalize
from ..module import Module
from ..parameter import Param

__all__ = ["norm_except_dim", "remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm"]

M = TypeVar("M", bound=Module)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every dim but ``dim`` (all of them when ``dim`` is -1 or None), kept in
    ``v``'s number of dims so that it broadcasts against ``v``."""
    if dim is None or dim == -1:
        return v.norm(pow)
    d = dim % v.ndim
    others = tuple(i for i in range(v.ndim) if i != d)
    return v.norm(pow, dim=others, keepdim=True) if others else v.abs()


class _WeightNorm:
    def __init__(self, name: str, dim: int | None) -> None:
        self.name, self.dim = name, dim

    def compute(self, module: Module) -> Tensor:
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, 2, -1 if self.dim is None else self.dim))

    def __call__(self, module: Module, inputs: Any) -> None:
        object.__setattr__(module, self.name, self.compute(module))


def weight_norm(module: M, name: str = "weight", dim: int | None = 0) -> M:
    """Split ``module.<name>`` into a magnitude ``<name>_g`` and a direction ``<name>_v`` (``dim``: the dim kept
    by the norm; None: one norm of the whole tensor); the weight is recomputed before each forward."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)  # fmt: skip
    if _find(module, name, (_WeightNorm, _SpectralNorm)) is not None:
        raise RuntimeError(
            f"weight_norm: cannot register two weight_norm/spectral_norm hooks on the same parameter {name!r}"
        )
    w = getattr(module, name)
    if dim is not None and dim < -1:
        dim += w.ndim
    fn = _WeightNorm(name, dim)
    del module._params[name]
    module.register_parameter(name + "_g", Param(norm_except_dim(w, 2, -1 if dim is None else dim).detach()))
    module.register_parameter(name + "_v", Param(w.detach()))
    object.__setattr__(module, name, fn.compute(module))
    _remember(module, name, fn)
    return module


def remove_weight_norm(module: M, name: str = "weight") -> M:
    """Undo ``weight_norm``: ``module.<name>`` is one parameter again, holding the current weight."""
    fn = _find(module, name, _WeightNorm)
    if fn is None:
        raise ValueError(f"remove_weight_norm: weight_norm of {name!r} not found in {type(module).__name__}")
    w = fn.compute(module).detach()
    return _restore(module, name, ("_g", "_v"), w)


def weight_matrix(w: Tensor, dim: int) -> Tensor:
    """``w`` as a matrix with its dim ``dim`` as the rows (spectral norm's view of a weight)."""
    if dim != 0:
        w = w.permute(dim, *[d for d in range(w.ndim) if d != dim])
    return w.reshape(w.shape[0], -1)


class _SpectralNorm:
    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        self.name, self.n, self.dim, self.eps = name, n_power_iterations, dim, eps

    def matrix(self, w: Tensor) -> Tensor:
        return weight_matrix(w, self.dim)

    def compute(self, module: Module, do_power_iteration: bool) -> Tensor:
        w = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        mat = self.matrix(w)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n):  # in place: the buffers carry the estimate from call to call
                    v.copy_(normalize(mv(mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(normalize(mv(mat, v), dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()  # (the graph keeps these, not the buffers updated next call)
        sigma = u.dot(mv(mat, v))
        return w / sigma

    def __call__(self, module: Module, inputs: Any) -> None:
        object.__setattr__(module, self.name, self.compute(module, module.training))


def spectral_norm(
    module: M, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> M:
    """Divide ``module.<name>`` by its largest singular value, estimated by ``n_power_iterations`` steps of power
    iteration per training forward (``dim``: the output dim, 1 for transposed convolutions)."""
    if n_power_iterations <= 0:
        raise ValueError(f"spectral_norm: n_power_iterations must be positive, got {n_power_iterations}")
    if _find(module, name, (_WeightNorm, _SpectralNorm)) is not None:
        raise RuntimeError(f"spectral_norm: cannot register two spectral_norm/weight_norm hooks on {name!r}")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    w = getattr(module, name)
    fn = _SpectralNorm(name, n_power_iterations, dim % w.ndim, eps)
    mat = fn.matrix(w.detach())
    h, wd = mat.shape
    u = normalize(w.new_empty(h).normal_(0, 1), dim=0, eps=eps)
    v = normalize(w.new_empty(wd).normal_(0, 1), dim=0, eps=eps)
    del module._params[name]
    module.register_parameter(name + "_orig", Param(w.detach()))
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    object.__setattr__(module, name, w.detach())
    _remember(module, name, fn)
    return module


def remove_spectral_norm(module: M, name: str = "weight") -> M:
    """Undo ``spectral_norm``: ``module.<name>`` is one parameter again, holding the current normalized weight."""
    fn = _find(module, name, _SpectralNorm)
    if fn is None:
        raise ValueError(f"remove_spectral_norm: spectral_norm of {name!r} not found in {type(module).__name__}")
    with no_grad():
        w = fn.compute(module, do_power_iteration=False)
    return _restore(module, name, ("_orig", "_u", "_v"), w.detach())


def _find(module: Module, name: str, kind: Any) -> Any:
    entry = getattr(module, "_ember_norm_hooks", {}).get(name)
    return entry[0] if entry is not None and isinstance(entry[0], kind) else None


def _remember(module: Module, name: str, fn: Any) -> None:
    """Keep ``fn`` as ``name``'s reparametrization and run it before each forward."""
    module._ember_norm_hooks = {
        **getattr(module, "_ember_norm_hooks", {}),
        name: (fn, module.register_forward_pre_hook(fn)),
    }


def _restore(module: M, name: str, parts: tuple[str, ...], w: Tensor) -> M:
    """Drop ``name``'s hook and its parts (``name + part``): ``name`` is one parameter again, holding ``w``."""
    hooks = dict(module._ember_norm_hooks)
    hooks.pop(name)[1].remove()
    module._ember_norm_hooks = hooks
    for part in parts:
        del module._params[name + part]
    module.__dict__.pop(name, None)
    module.register_parameter(name, Param(w))
    return module
