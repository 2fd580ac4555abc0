"""The operators whose gradients through complex tensors are right (``Function.apply`` refuses the others)."""

from __future__ import annotations

__all__ = ["COMPLEX_GRAD_OPS"]

#: Operators whose gradients are right for complex tensors: tested against PyTorch on complex inputs
#: (``tests/ops/test_complex.py``), or operators that only move, copy or sum values. Any other operator with a
#: complex result refuses to record a gradient (a clear error, never a silently wrong gradient); its forward
#: still runs under ``no_grad``. An operator joins this set together with its test against PyTorch.
COMPLEX_GRAD_OPS = frozenset({
    # pointwise arithmetic and transcendental functions (``pointwise_op`` conjugates each derivative)
    "Acos", "Acosh", "Add", "Asin", "Asinh", "Atan", "Atanh", "Cos", "Cosh", "Div", "Exp", "Exp2", "Expm1", "Log",
    "Log10", "Log1p", "Log2", "Logaddexp", "Mul", "Neg", "Pow", "Reciprocal", "Rsqrt", "Sigmoid", "Sin", "Sinh",
    "Sqrt", "Square", "Sub", "Tan", "Tanh",
    # parts, magnitude and phase
    "Abs", "Angle", "Complex", "ConjPhysical", "Imag", "Polar", "Real", "Sgn", "ViewAsComplex", "ViewAsReal",
    # reductions and products
    "CumProd", "CumSum", "Einsum", "MatMul", "Mean", "Norm2", "Sum", "VectorNorm", "_Linear",
    # Fourier transforms (tests/ops/test_fft.py)
    "FftC2C", "FftC2R", "FftR2C",
    # linear algebra (tests/ops/test_linalg_decomp.py, test_complex_grad_ops.py)
    "Cholesky", "CholeskyInverse", "CholeskySolve", "Det", "Eig", "Eigh", "Inv", "Lu", "MatrixExp", "Pinv", "Qr",
    "Slogdet", "Solve", "SolveTriangular", "Svd", "SvdLowRank",
    # found right by op_db's complex sweep (tests/ops/test_opdb_complex.py, test_complex_grad_ops.py)
    "AsStrided", "Conv", "ConvT", "Sinc", "SumTo", "Unfold",
    # moving, copying and selecting values
    "AsView", "Cast", "Cat", "Clone", "Contiguous", "CopySlices", "Diagonal", "DiagonalBackward", "Expand", "Flip",
    "GetItem", "IndexBackward", "IndexPut", "Pad", "PadBackward", "Permute", "Reshape", "Roll", "Split",
    "Stack", "StridedView", "ToDevice", "ViewOp", "Where", "_Replay", "_Scatter", "_ScatterAdd", "_Tri", "_ZeroRegion",
})  # fmt: skip
