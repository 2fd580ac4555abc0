"""PyTorch's ``torch.nn.utils.parametrizations``: ``weight_norm`` and ``spectral_norm`` as parametrizations
(``parametrize.py``), the forms PyTorch recommends over the hook-based ones, with its state dict keys."""

from __future__ import annotations

from typing import TypeVar

from ..._tensor import Tensor
from ...autograd._grad_mode import no_grad
from ...ops import mv
from ..functional import normalize
from ..module import Module
from .parametrize import register_parametrization
from .weight_norm import norm_except_dim, weight_matrix

__all__ = ["spectral_norm", "weight_norm"]

M = TypeVar("M", bound=Module)


class _WeightNorm(Module):
    def __init__(self, dim: int | None) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: M, name: str = "weight", dim: int | None = 0) -> M:
    """``module.<name> = g * v / ||v||`` with ``g`` (``original0``) and ``v`` (``original1``) trained."""
    w = getattr(module, name)
    if dim is not None and dim < -1:
        dim += w.ndim
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int, dim: int, eps: float) -> None:
        super().__init__()
        if n_power_iterations <= 0:
            raise ValueError(f"spectral_norm: n_power_iterations must be positive, got {n_power_iterations}")
        self.dim = dim % weight.ndim if weight.ndim else 0
        self.eps, self.n_power_iterations = eps, n_power_iterations
        if weight.ndim > 1:
            mat = self._matrix(weight.detach())
            h, w = mat.shape
            self.register_buffer("_u", normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=eps))
            self.register_buffer("_v", normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=eps))
            self._power_method(mat, 15)

    def _matrix(self, w: Tensor) -> Tensor:
        return weight_matrix(w, self.dim)

    def _power_method(self, mat: Tensor, n: int) -> None:
        with no_grad():
            for _ in range(n):
                self._u.copy_(normalize(mv(mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(mv(mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        mat = self._matrix(weight)
        if self.training:
            self._power_method(mat.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = u.dot(mv(mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: M, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> M:
    """``module.<name>`` divided by its largest singular value (power iteration on the buffers ``_u``/``_v`` at
    each training forward; ``dim``: the output dim, 1 for transposed convolutions)."""
    w = getattr(module, name)
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    register_parametrization(module, name, _SpectralNorm(w, n_power_iterations, dim, eps))
    return module
