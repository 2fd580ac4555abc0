"""PyTorch's ``torch.nn.utils.parametrizations``: ``orthogonal``, and ``weight_norm`` and ``spectral_norm`` as
parametrizations (``parametrize.py``), the forms PyTorch recommends over the hook-based ones, with its state dict
keys."""

from __future__ import annotations

from typing import TypeVar

from ... import linalg
from ..._creation import eye, randn, zeros_like
from ..._dtype import bool_
from ..._tensor import Tensor
from ..._torch_names import finfo
from ...autograd._grad_mode import no_grad
from ...ops import allclose, cat, geqrf, matrix_exp, mv, where
from ..functional import normalize
from ..module import Module
from .parametrize import register_parametrization
from .weight_norm import norm_except_dim, weight_matrix

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

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


_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    return bool(allclose(q.mH @ q, eye(k, dtype=q.dtype, device=q.device), atol=10.0 * n * finfo(q.dtype).eps))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of ``a = QR`` (``a`` tall, maybe complex) with ``diag(R)`` real and non-negative."""
    x, tau = geqrf(a)
    return linalg.householder_product(x, tau) * x.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X, n, k = X.mT, k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == "matrix_exp":
                Q = matrix_exp(A)
            else:
                Id = eye(n, dtype=A.dtype, device=A.device)
                Q = linalg.solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = linalg.householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if self.base is not None if "base" in self._params else False:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
        with no_grad():
            if tuple(Q.shape) != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {tuple(self.shape)}. "
                                 f"Got a tensor of shape {tuple(Q.shape)}.")  # fmt: skip
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q, n, k = Q.mT, k, n
            if "base" not in self._params:
                if self.orthogonal_map in ("matrix_exp", "cayley"):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")  # fmt: skip
                A, tau = geqrf(Q)
                d = A.diagonal(dim1=-2, dim2=-1)
                d = d.sign() * (1 - 2 * (tau == 0.0).to(d.dtype))  # (PyTorch: sign, then -1 where tau is 0)
                A = where(eye(n, k, dtype=bool_, device=A.device), d.unsqueeze(-2), A)
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(cat([Q, N], dim=-1))
            self.register_buffer("base", Q)
            m1, m2 = Q_init.shape[-2], Q_init.shape[-1]
            return zeros_like(Q_init) - eye(m1, m2, dtype=Q_init.dtype, device=Q_init.device)  # -I


def orthogonal(module: M, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> M:  # fmt: skip
    """Make ``module.<name>`` (a matrix or a batch of them) orthogonal or unitary (PyTorch's parametrization).

    ``orthogonal_map``: ``"matrix_exp"``, ``"cayley"`` or ``"householder"`` (default: ``"matrix_exp"`` for a
    square or complex matrix, else ``"householder"``); ``use_trivialization`` keeps PyTorch's extra ``base``
    buffer (``parametrizations.<name>.0.base``). The initial value is the weight made orthogonal by QR.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")  # fmt: skip
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    register_parametrization(module, name, orth, unsafe=True)
    return module
