"""Linear-algebra kernels NumPy lacks or spells differently (LU with partial pivoting, the matrix exponential, LDL):
the reference for NumPy and CuPy, written against ``xp``. torch overrides them with ``torch.linalg``'s own.

``lu_factor`` returns LAPACK's ``getrf`` layout (``LU`` packed, 1-based int32 ``pivots``), as PyTorch does.
"""

from __future__ import annotations

import math
from typing import Any

#: Padé(13) coefficients of the scaling-and-squaring matrix exponential (Higham 2005) and its theta_13
_PADE13 = (
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
    10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0,
)  # fmt: skip
_THETA13 = 5.371920351148152


class LinalgKernels:
    """Mixin of ``Backend`` (``xp`` comes from it)."""

    xp: Any

    def lu_factor(self, a: Any) -> tuple[Any, Any]:
        """Partial-pivoting LU of (a batch of) m x n matrices: ``(LU, pivots)`` in LAPACK's ``getrf`` layout."""
        xp = self.xp
        *batch, m, n = a.shape
        k = min(m, n)
        lu = xp.reshape(xp.array(a, copy=True), (math.prod(batch), m, n))
        b = lu.shape[0]
        rows = xp.arange(b)
        piv = xp.zeros((b, k), dtype=xp.int32)
        for j in range(k):
            p = xp.argmax(xp.abs(lu[:, j:, j]), axis=-1) + j if m > j else xp.zeros((b,), dtype=xp.int64)
            piv[:, j] = p + 1
            row_p = lu[rows, p, :].copy()
            lu[rows, p, :] = lu[:, j, :]
            lu[:, j, :] = row_p
            d = lu[:, j, j]
            safe = xp.where(d == 0, 1.0, d)
            lu[:, j + 1 :, j] = xp.where(d[:, None] == 0, lu[:, j + 1 :, j], lu[:, j + 1 :, j] / safe[:, None])
            if j + 1 < n:
                lu[:, j + 1 :, j + 1 :] -= lu[:, j + 1 :, j, None] * lu[:, j, None, j + 1 :]
        return xp.reshape(lu, (*batch, m, n)), xp.reshape(piv, (*batch, k))

    def lu_permutation(self, pivots: Any, m: int) -> Any:
        """The row order ``perm`` that LAPACK's sequential row swaps ``pivots`` make: ``A[perm] = L U``."""
        xp = self.xp
        *batch, k = pivots.shape
        piv = xp.reshape(pivots.astype(xp.int64), (math.prod(batch), k)) - 1
        b = piv.shape[0]
        perm = xp.broadcast_to(xp.arange(m), (b, m)).copy()
        rows = xp.arange(b)
        for j in range(k):
            p = piv[:, j]
            pj = perm[:, j].copy()
            perm[:, j] = perm[rows, p]
            perm[rows, p] = pj
        return xp.reshape(perm, (*batch, m))

    def matrix_exp(self, a: Any) -> Any:
        """``exp(A)`` of (a batch of) square matrices by scaling and squaring with a Padé(13) approximant."""
        xp = self.xp
        *batch, n, _ = a.shape
        x = xp.reshape(a, (math.prod(batch), n, n))
        norm1 = xp.max(xp.sum(xp.abs(x), axis=-2), axis=-1)  # per-matrix 1-norm
        finite = xp.where(xp.isfinite(norm1), norm1, 0.0)
        s = xp.maximum(xp.ceil(xp.log2(xp.maximum(finite, 1e-300) / _THETA13)), 0.0)
        s = xp.where(finite == 0, 0.0, s)
        x = x / (2.0**s).astype(x.dtype)[:, None, None]
        eye = xp.eye(n, dtype=x.dtype)
        x2 = xp.matmul(x, x)
        x4 = xp.matmul(x2, x2)
        x6 = xp.matmul(x4, x2)
        c = _PADE13
        u = xp.matmul(x6, c[13] * x6 + c[11] * x4 + c[9] * x2) + c[7] * x6 + c[5] * x4 + c[3] * x2 + c[1] * eye
        u = xp.matmul(x, u)
        v = xp.matmul(x6, c[12] * x6 + c[10] * x4 + c[8] * x2) + c[6] * x6 + c[4] * x4 + c[2] * x2 + c[0] * eye
        r = xp.linalg.solve(v - u, v + u)
        steps = int(xp.max(s)) if s.size else 0
        for i in range(steps):
            r = xp.where((s > i)[:, None, None], xp.matmul(r, r), r)
        return xp.reshape(r, (*batch, n, n))

    def svd(self, a: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
        """``(U, S, Vh)`` of (a batch of) matrices, LAPACK's ``gesdd`` (NumPy's, PyTorch's CPU driver)."""
        return self.xp.linalg.svd(a, full_matrices=full_matrices)  # type: ignore[no-any-return]

    def qr(self, a: Any, complete: bool) -> tuple[Any, Any]:
        """``(Q, R)`` of (a batch of) matrices: ``complete`` gives square Q, else the reduced factors."""
        return self.xp.linalg.qr(a, mode="complete" if complete else "reduced")  # type: ignore[no-any-return]

    def geqrf(self, a: Any) -> tuple[Any, Any]:
        """LAPACK's ``geqrf`` of (a batch of) matrices: R on and above the diagonal, the Householder vectors below
        it, and their scalars ``tau`` (``torch.geqrf``)."""
        xp = self.xp
        h, tau = xp.linalg.qr(a, mode="raw")  # (NumPy's h is the Fortran result: transposed)
        return xp.ascontiguousarray(xp.swapaxes(h, -1, -2)).astype(a.dtype), tau.astype(a.dtype)

    def eigh(self, a: Any, upper: bool) -> tuple[Any, Any]:
        """Ascending eigenvalues and eigenvectors of Hermitian matrices, read from one triangle."""
        return self.xp.linalg.eigh(a, UPLO="U" if upper else "L")  # type: ignore[no-any-return]

    def eig(self, a: Any) -> tuple[Any, Any]:
        """Eigenvalues and unit-norm right eigenvectors of square matrices, always complex (``torch.linalg.eig``;
        NumPy returns real arrays when every eigenvalue is real)."""
        xp = self.xp
        w, v = xp.linalg.eig(a)
        c = xp.result_type(a.dtype, xp.complex64)
        return xp.asarray(w, dtype=c), xp.asarray(v, dtype=c)

    def ldl_factor(self, a: Any, hermitian: bool) -> tuple[Any, Any]:
        """Bunch-Kaufman LDL^T of symmetric matrices in LAPACK's ``sytrf`` layout: ``(LD, pivots)``."""
        lapack = _scipy_lapack("linalg.ldl_factor")
        host = self.to_numpy(a)  # type: ignore[attr-defined]
        import numpy as np

        *batch, n, _ = host.shape
        flat = host.reshape(math.prod(batch), n, n)
        lds, pivs = np.empty_like(flat), np.empty((flat.shape[0], n), dtype=np.int32)
        routine = _ldl_routine("trf", flat, hermitian)
        fn: Any = lapack.get_lapack_funcs(routine, (flat,)) if flat.size else None
        for i, m in enumerate(flat if fn is not None else []):
            ld, ipiv, info = fn(m, lower=1)
            if info < 0:
                raise ValueError(f"linalg.ldl_factor: LAPACK {routine} rejected argument {-info}")
            lds[i], pivs[i] = np.tril(ld), ipiv
        from_np = self.from_numpy  # type: ignore[attr-defined]
        return from_np(lds.reshape(host.shape)), from_np(pivs.reshape(*batch, n))

    def ldl_solve(self, ld: Any, pivots: Any, b: Any, hermitian: bool) -> Any:
        """Solve ``A X = B`` from ``ldl_factor``'s result."""
        lapack = _scipy_lapack("linalg.ldl_solve")
        import numpy as np

        ldh, ph, bh = self.to_numpy(ld), self.to_numpy(pivots), self.to_numpy(b)  # type: ignore[attr-defined]
        batch = np.broadcast_shapes(ldh.shape[:-2], bh.shape[:-2])
        n, k = ldh.shape[-1], bh.shape[-1]
        b = math.prod(batch)
        ldb = np.broadcast_to(ldh, (*batch, n, n)).reshape(b, n, n)
        pb = np.broadcast_to(ph, (*batch, n)).reshape(b, n)
        bb = np.broadcast_to(bh, (*batch, n, k)).reshape(b, n, k)
        out = np.empty(bb.shape, dtype=np.result_type(ldb, bb))
        routine = _ldl_routine("trs", out, hermitian)
        fn: Any = lapack.get_lapack_funcs(routine, (out,)) if ldb.size else None
        for i in range(ldb.shape[0] if fn is not None else 0):
            out[i], info = fn(ldb[i], pb[i], bb[i], lower=1)
            if info < 0:
                raise ValueError(f"linalg.ldl_solve: LAPACK {routine} rejected argument {-info}")
        return self.from_numpy(out.reshape(*batch, n, k))  # type: ignore[attr-defined]


def _ldl_routine(step: str, a: Any, hermitian: bool) -> str:
    """LAPACK's Bunch-Kaufman routine for ``a``: ``he*`` for a complex Hermitian matrix, ``sy*`` otherwise."""
    return ("he" if hermitian and a.dtype.kind == "c" else "sy") + step


def _scipy_lapack(op: str) -> Any:
    try:
        from scipy import linalg
    except ImportError:
        raise ImportError(
            f"{op} on this backend needs SciPy's LAPACK: pip install scipy (or use the torch backend)"
        ) from None
    return linalg.lapack
