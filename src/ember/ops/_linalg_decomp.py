"""Matrix decompositions with their gradients (torch docs, "BLAS and LAPACK Operations"; ``ember.linalg``): the
singular value decomposition, QR and the symmetric eigendecomposition.

Gradients follow PyTorch's (``FunctionsManual.cpp``): they are those of the reduced decompositions, and where a
gradient is ill-defined PyTorch's choice is kept (``full_matrices=True`` differentiates through the first ``k``
singular vectors; QR in ``mode='r'`` or ``'complete'`` with more rows than columns refuses to differentiate).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from .._errors import LinAlgError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._blas import matmul
from ._indexing_join import cat
from ._indexing_view import _transpose, unsqueeze
from ._lapack import solve
from ._other_diagonal import diag_embed, diagonal, tril
from ._pointwise_complex import cj
from ._util import _float

__all__ = ["geqrf", "pca_lowrank", "qr", "svd", "svd_lowrank"]
METHODS = ["geqrf", "qr", "svd"]

SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
TorchSVDResult = namedtuple("TorchSVDResult", ["U", "S", "V"])
QRResult = namedtuple("QRResult", ["Q", "R"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


def _mT(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    return _transpose(x, -1, -2)


def _mH(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """The conjugate transpose (the transpose of a real matrix)."""
    return cj(_transpose(x, -1, -2))


def _matrices(op: str, A: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
    if A.ndim < 2:
        raise ShapeError(f"{op}: expected a matrix or a batch of matrices (..., m, n), got shape {tuple(A.shape)}")
    return _float(A)


def _square(op: str, A: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
    a = _matrices(op, A)
    if a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{op}: expected square matrices (..., n, n), got shape {tuple(A.shape)}")
    return a


def _linalg_error(op: str, e: Exception) -> Exception:
    return LinAlgError(f"{op}: the decomposition did not converge or the input is invalid ({e})")


def _unit_diagonal(e: Tensor) -> Tensor:
    """``e`` (zero on its diagonal) with ones there: the denominators of the singular/eigen vector gradients."""
    return e + diag_embed(e.new_ones((e.shape[-1],)))


class Svd(Op):
    n_out = 3
    saves_inputs = False
    saves_output = True

    def forward(self, a: Any, full_matrices: bool) -> Any:
        try:
            u, s, vh = self.backend.svd(a, full_matrices)
        except Exception as e:  # LinAlgError of the array library
            raise _linalg_error("svd", e) from None
        self.full = full_matrices
        self.keep(u, s, vh)
        return u, s, vh

    def backward(self, gU: Any, gS: Any, gVh: Any) -> tuple[Any, None]:  # noqa: N803 - PyTorch's names
        U, S, Vh = self.output(0), self.output(1), self.output(2)
        m, n = U.shape[-2], Vh.shape[-1]
        k = S.shape[-1]
        if self.full:  # PyTorch: the gradient of the reduced decomposition
            U, Vh = U[..., :k], Vh[..., :k, :]
            gU = None if gU is None else gU[..., :k]
            gVh = None if gVh is None else gVh[..., :k, :]
        return svd_backward(gU, gS, gVh, U, S, Vh, m, n), None


def svd_backward(gU: Any, gS: Any, gVh: Any, U: Tensor, S: Tensor, Vh: Tensor, m: int, n: int) -> Tensor:  # noqa: N803
    """The gradient of ``A = U diag(S) Vh`` (reduced) for the given output gradients (None: zero): PyTorch's
    ``svd_backward``. Complex singular vectors are defined up to a phase per pair; a loss that depends on it
    (``Im diag(U^H gU) != -Im diag(V^H gV)``) has no gradient: a ``RuntimeError`` says so, as PyTorch's."""
    if gU is None and gVh is None:
        if gS is None:
            return U.new_zeros((*U.shape[:-2], m, n))
        return matmul(U * unsqueeze(gS, -2), Vh)
    k = S.shape[-1]
    S2 = S * S
    E = _unit_diagonal(unsqueeze(S2, -2) - unsqueeze(S2, -1))  # E_ij = S_j^2 - S_i^2
    UhgU = None if gU is None else _skew(matmul(_mH(U), gU))
    VhgV = None if gVh is None else _skew(matmul(Vh, _mH(gVh)))
    complex_ = U.dtype.is_complex
    if complex_:
        _check_phase_invariant(UhgU, VhgV)
    inner = None
    if UhgU is not None:
        inner = UhgU * unsqueeze(S, -2)
    if VhgV is not None:
        term = unsqueeze(S, -1) * VhgV
        inner = term if inner is None else inner + term
    gA = inner / E  # type: ignore[operator]
    if gS is not None:
        gA = gA + diag_embed(gS)
    if complex_ and UhgU is not None:  # the imaginary diagonal: U's phases, paired with V's
        gA = gA + diag_embed(diagonal(UhgU, 0, -2, -1) / (2 * S))
    if m > k and gU is not None:
        gUSinv = gU / unsqueeze(S, -2)
        gA = matmul(U, gA) + gUSinv - matmul(U, matmul(_mH(U), gUSinv))
        return matmul(gA, Vh)
    if n > k and gVh is not None:
        SinvgVh = gVh / unsqueeze(S, -1)
        gA = matmul(gA, Vh) + SinvgVh - matmul(matmul(SinvgVh, _mH(Vh)), Vh)
        return matmul(U, gA)
    return matmul(matmul(U, gA), Vh)


def _skew(x: Tensor) -> Tensor:
    return x - _mH(x)


def _check_phase_invariant(UhgU: Tensor | None, VhgV: Tensor | None) -> None:  # noqa: N803 - PyTorch's names
    """PyTorch's check (same tolerances) that the loss does not depend on the singular vectors' phases."""
    iu = None if UhgU is None else diagonal(UhgU, 0, -2, -1).imag
    iv = None if VhgV is None else -diagonal(VhgV, 0, -2, -1).imag
    if iu is None or iv is None:
        diff, ref = (iu if iv is None else iv).abs(), 0.0  # type: ignore[union-attr]
    else:
        diff, ref = (iu - iv).abs(), iv.abs()
    if bool((diff > 1e-2 + 1e-2 * ref).any()):
        raise RuntimeError(
            "svd_backward: The singular vectors in the complex case are specified up to multiplication by "
            "e^{i phi}. The specified loss function depends on this phase term, making it ill-defined."
        )


def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> SVDResult:  # noqa: N803
    """``A = U diag(S) Vh`` (``torch.linalg.svd``): singular values in descending order."""
    a = _matrices("linalg.svd", A)
    U, S, Vh = Svd.apply(a, bool(full_matrices))
    return SVDResult(U, S, Vh)


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> TorchSVDResult:
    """``torch.svd``: ``(U, S, V)`` with ``V = Vh^H`` (not ``Vh``); ``some=False`` gives the full square factors,
    ``compute_uv=False`` zero-filled square ones (as PyTorch)."""
    a = _matrices("svd", input)
    if not compute_uv:
        S = Svd.apply(a, False)[1]
        batch, m, n = tuple(a.shape[:-2]), a.shape[-2], a.shape[-1]
        return TorchSVDResult(a.new_zeros((*batch, m, m)), S, a.new_zeros((*batch, n, n)))
    U, S, Vh = Svd.apply(a, not some)
    return TorchSVDResult(U, S, _mH(Vh))


class SvdLowRank(Op):
    """The ``q`` largest singular triplets; the gradient is the truncated SVD's (PyTorch's for its low-rank
    approximation: exact where ``A`` has rank ``q`` or less)."""

    n_out = 3
    saves_inputs = False
    saves_output = True

    def forward(self, a: Any, q: int) -> Any:
        try:
            u, s, vh = self.backend.svd(a, False)
        except Exception as e:  # LinAlgError of the array library
            raise _linalg_error("svd_lowrank", e) from None
        self.m, self.n = a.shape[-2], a.shape[-1]
        u, s, vh = u[..., :q], s[..., :q], vh[..., :q, :]
        self.keep(u, s, vh)
        return u, s, vh

    def backward(self, gU: Any, gS: Any, gVh: Any) -> tuple[Any, None]:  # noqa: N803 - PyTorch's names
        U, S, Vh = self.output(0), self.output(1), self.output(2)
        return svd_backward(gU, gS, gVh, U, S, Vh, self.m, self.n), None


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None) -> TorchSVDResult:  # noqa: N803
    """``(U, S, V)`` of the ``q`` largest singular values of ``A - M`` (``torch.svd_lowrank``; ``min(q, m, n)``
    of them). Computed exactly (PyTorch approximates them by random projections, ``niter`` refining it), so the
    factors equal PyTorch's where ``A - M`` has rank ``q`` or less, up to the signs of singular vectors."""
    a = _matrices("svd_lowrank", A if M is None else A - M)
    k = min(6 if q is None else int(q), a.shape[-2], a.shape[-1])
    if k < 0:
        raise ValueRangeError(f"svd_lowrank: q must be a non-negative integer, got {q}")
    U, S, Vh = SvdLowRank.apply(a, k)
    return TorchSVDResult(U, S, _mT(Vh).conj() if Vh.dtype.is_complex else _mT(Vh))


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> TorchSVDResult:  # noqa: N803
    """``svd_lowrank`` of ``A`` less its column means (``center``): the principal directions of the rows of ``A``
    are ``V``'s columns (``torch.pca_lowrank``; ``q`` defaults to ``min(6, m, n)``)."""
    m, n = A.shape[-2], A.shape[-1]
    q = min(6, m, n) if q is None else q
    if not 0 <= q <= min(m, n):
        raise ValueRangeError(
            f"pca_lowrank: q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}"
        )
    a = A - A.mean(dim=-2, keepdim=True) if center else A
    return svd_lowrank(a, q, niter)


def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:  # noqa: N803 - PyTorch's name
    """The singular values of ``A`` in descending order (``torch.linalg.svdvals``)."""
    a = _matrices("linalg.svdvals", A)
    return Svd.apply(a, False)[1]  # type: ignore[no-any-return]


class Qr(Op):
    n_out = 2
    saves_inputs = True
    saves_output = True

    def forward(self, a: Any, mode: str) -> Any:
        self.mode = mode
        try:
            q, r = self.backend.qr(a, mode == "complete")
        except Exception as e:
            raise _linalg_error("qr", e) from None
        self.keep(q, r)
        return q, r

    def backward(self, gQ: Any, gR: Any) -> tuple[Any, None]:  # noqa: N803 - PyTorch's names
        a = self.inputs[0]  # type: ignore[index]
        m, n = a.shape[-2], a.shape[-1]
        if self.mode == "r":
            raise RuntimeError(
                "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
                "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr."
            )
        if self.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        Q, R = self.output(0), self.output(1)
        if gQ is None and gR is None:
            return a.new_zeros(a.shape), None
        if m >= n:
            return _qr_backward_tall(Q, R, gQ, gR), None
        # wide: A = Q [X | Y], R = [U | V] with U square; X = Q U is a square QR
        Y, Ru = a[..., m:], R[..., :m]
        gRu = None if gR is None else gR[..., :m]
        gV = None if gR is None else gR[..., m:]
        gQx = gQ
        if gV is not None:
            extra = matmul(Y, _mH(gV))
            gQx = extra if gQx is None else gQx + extra
        gX = _qr_backward_tall(Q, Ru, gQx, gRu)
        gY = matmul(Q, gV) if gV is not None else Y.new_zeros(Y.shape)
        return cat([gX, gY], -1), None


def _qr_backward_tall(Q: Tensor, R: Tensor, gQ: Any, gR: Any) -> Tensor:  # noqa: N803 - PyTorch's names
    """``gA = (gQ + Q copyltu(M)) R^-H`` with ``M = R gR^H - gQ^H Q`` (m >= n, reduced); ``copyltu(M)`` is
    Hermitian, from M's strict lower triangle and the real part of its diagonal (R's diagonal is real)."""
    from ._lapack import solve_triangular

    M = None
    if gR is not None:
        M = matmul(R, _mH(gR))
    if gQ is not None:
        t = matmul(_mH(gQ), Q)
        M = -t if M is None else M - t
    low = tril(M, -1)  # type: ignore[arg-type]
    d = diagonal(M, 0, -2, -1)  # type: ignore[arg-type]
    sym = low + _mH(low) + diag_embed(d.real.to(d.dtype) if d.dtype.is_complex else d)
    b = matmul(Q, sym)
    if gQ is not None:
        b = b + gQ
    return solve_triangular(_mH(R), b, upper=False, left=False)


def linalg_qr(A: Tensor, mode: str = "reduced") -> QRResult:  # noqa: N803 - PyTorch's name
    """``A = Q R`` (``torch.linalg.qr``): ``mode`` 'reduced', 'complete' or 'r' (Q empty)."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueRangeError(f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    a = _matrices("linalg.qr", A)
    Q, R = Qr.apply(a, mode)
    if mode == "r":
        return QRResult(Q.new_zeros((0,)), R)
    return QRResult(Q, R)


def qr(input: Tensor, some: bool = True) -> QRResult:
    """``torch.qr``: ``some=False`` is ``mode='complete'``."""
    return linalg_qr(input, "reduced" if some else "complete")


class Geqrf(Op):
    n_out = 2
    saves_inputs = False

    def forward(self, a: Any) -> Any:
        try:
            return self.backend.geqrf(a)
        except Exception as e:
            raise _linalg_error("geqrf", e) from None

    def backward(self, *grads: Any) -> tuple[Any]:
        raise RuntimeError("the derivative for 'geqrf' is not implemented (as in PyTorch); use linalg.qr")


def geqrf(input: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK's ``geqrf`` (``torch.geqrf``): ``(a, tau)``, R on and above ``a``'s diagonal and the Householder
    vectors below it (``linalg.householder_product(a, tau)`` is Q). Not differentiable, as in PyTorch."""
    a = _matrices("geqrf", input)
    return Geqrf.apply(a)  # type: ignore[return-value]


class Eigh(Op):
    n_out = 2
    saves_inputs = False
    saves_output = True

    def forward(self, a: Any, upper: bool) -> Any:
        try:
            w, v = self.backend.eigh(a, upper)
        except Exception as e:
            raise _linalg_error("eigh", e) from None
        self.keep(w, v)
        return w, v

    def backward(self, gL: Any, gV: Any) -> tuple[Any, None]:  # noqa: N803 - PyTorch's names
        """PyTorch's ``linalg_eig_backward`` for Hermitian matrices: ``gA = V (skew(V^H gV) / 2E + diag(gL)) V^H``
        (``E_ij = L_j - L_i``); a loss that depends on complex eigenvectors' phases (``Im diag(V^H gV) != 0``)
        raises a ``RuntimeError``, as PyTorch's."""
        L, V = self.output(0), self.output(1)
        if gV is None:
            if gL is None:
                return V.new_zeros(V.shape), None
            return matmul(V * unsqueeze(gL, -2), _mH(V)), None
        VhgV = matmul(_mH(V), gV)
        if VhgV.dtype.is_complex and bool((diagonal(VhgV, 0, -2, -1).imag.abs() > 1e-2).any()):
            raise RuntimeError(
                "linalg_eigh_backward: The eigenvectors in the complex case are specified up to multiplication "
                "by e^{i phi}. The specified loss function depends on this quantity, so it is ill-defined."
            )
        skew = (VhgV - _mH(VhgV)) * 0.5
        E = _unit_diagonal(unsqueeze(L, -2) - unsqueeze(L, -1))  # E_ij = L_j - L_i
        inner = skew / E
        if gL is not None:  # PyTorch puts gL on the diagonal, over skew's (zero when real or phase-invariant)
            if inner.dtype.is_complex:
                inner = inner - diag_embed(diagonal(inner, 0, -2, -1))
            inner = inner + diag_embed(gL)
        return matmul(matmul(V, inner), _mH(V)), None


def _uplo(op: str, UPLO: str) -> bool:  # noqa: N803 - PyTorch's name
    if UPLO not in ("L", "U"):
        raise ValueRangeError(f"{op}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO == "U"


def eigh(A: Tensor, UPLO: str = "L") -> EighResult:  # noqa: N803 - PyTorch's names
    """Eigenvalues (ascending) and orthonormal eigenvectors of symmetric matrices (``torch.linalg.eigh``);
    only the ``UPLO`` triangle of ``A`` is read."""
    a = _square("linalg.eigh", A)
    w, v = Eigh.apply(a, _uplo("linalg.eigh", UPLO))
    return EighResult(w, v)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803 - PyTorch's names
    """Eigenvalues (ascending) of symmetric matrices (``torch.linalg.eigvalsh``)."""
    a = _square("linalg.eigvalsh", A)
    return Eigh.apply(a, _uplo("linalg.eigvalsh", UPLO))[0]  # type: ignore[no-any-return]


class Eig(Op):
    """``A V = V diag(L)`` for general square matrices: complex ``L`` and unit-norm columns of ``V``."""

    n_out = 2
    saves_inputs = True
    saves_output = True

    def forward(self, a: Any) -> Any:
        try:
            w, v = self.backend.eig(a)
        except Exception as e:
            raise _linalg_error("eig", e) from None
        self.keep(w, v)
        return w, v

    def backward(self, gL: Any, gV: Any) -> tuple[Any]:  # noqa: N803 - PyTorch's names
        """PyTorch's ``linalg_eig_backward``: ``gA = V^-H (diag(gL) + P(V^H gV) / conj(E)) V^H``, where ``P``
        removes the part of ``V^H gV`` that only rescales the eigenvectors' phases; the gradient of a real input
        is the real part."""
        a = self.inputs[0]  # type: ignore[index]
        L, V = self.output(0), self.output(1)
        if gL is None and gV is None:
            return (a.new_zeros(a.shape),)
        Vh = V.mH
        if gV is None:
            inner = diag_embed(gL)
        else:
            VhgV = matmul(Vh, gV)
            d = diagonal(VhgV, 0, -2, -1)
            if bool((d.imag.abs() > 1e-2 * (1 + d.abs())).any()):
                raise ValueRangeError(
                    "linalg_eig_backward: The eigenvectors in the complex case are specified up to multiplication "
                    "by e^{i phi}. The specified loss function depends on this quantity, so it is ill-defined."
                )
            VhgV = VhgV - matmul(Vh, V * unsqueeze(d.real, -2))
            Lc = L.conj()
            E = _unit_diagonal(unsqueeze(Lc, -2) - unsqueeze(Lc, -1))  # E_ij = conj(L_j - L_i)
            inner = VhgV / E
            inner = inner - diag_embed(diagonal(inner, 0, -2, -1))
            if gL is not None:
                inner = inner + diag_embed(gL)
        gA = solve(Vh, matmul(inner, Vh))
        return (gA if a.dtype.kind == "c" else gA.real,)


def eig(A: Tensor) -> EigResult:  # noqa: N803 - PyTorch's name
    """Eigenvalues and eigenvectors of general square matrices (``torch.linalg.eig``), both complex; the
    eigenvectors have unit norm and are defined up to a phase (a loss that depends on it has no gradient)."""
    a = _square("linalg.eig", A)
    w, v = Eig.apply(a)
    return EigResult(w, v)


def eigvals(A: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
    """Eigenvalues of general square matrices (``torch.linalg.eigvals``), complex."""
    return eig(A).eigenvalues
