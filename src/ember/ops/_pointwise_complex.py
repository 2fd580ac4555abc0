"""Complex numbers (torch docs, "Pointwise Ops" and "Creation Ops"): the parts of a complex tensor as views,
conjugates, ``angle``/``abs``/``sgn``, and building complex tensors (``complex``, ``polar``).

Gradients follow PyTorch's convention: for a real loss L of a complex z = x + iy, ``z.grad`` is
dL/dx + i dL/dy (twice the conjugate Wirtinger derivative). A node with a complex output goes through its
Tensor ``backward``, written with the conjugates this needs (``autograd._function.complex_node_class``).
"""

from __future__ import annotations

import builtins
from typing import Any

from .._errors import DTypeError, ShapeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._indexing import where
from ._indexing_view import ViewOp, sum_to
from ._util import _float

__all__ = [
    "adjoint",
    "angle",
    "complex",
    "conj",
    "conj_physical",
    "is_complex",
    "is_conj",
    "is_neg",
    "isreal",
    "polar",
    "real",
    "imag",
    "resolve_conj",
    "resolve_neg",
    "sgn",
    "view_as_complex",
    "view_as_real",
]
METHODS = [n for n in __all__ if n not in {"complex", "polar", "real", "imag", "view_as_complex", "view_as_real"}]


def _is_c(x: Tensor) -> bool:
    return x._data.dtype in x._backend.complex_dtypes


def conj_if_complex(x: Tensor) -> Tensor:
    """``conj(x)`` for a complex tensor, ``x`` itself for a real one (backward rules use it)."""
    return ConjPhysical.apply(x) if x._data.dtype in x._backend.complex_dtypes else x  # type: ignore[no-any-return]


def cj(x: Any) -> Any:
    """The conjugate of a Tensor or a Python number for backward rules (PyTorch's convention multiplies the
    upstream gradient by the conjugate derivative); real values pass unchanged."""
    if isinstance(x, Tensor):
        return ConjPhysical.apply(x) if x._data.dtype in x._backend.complex_dtypes else x
    return x.conjugate() if isinstance(x, builtins.complex) else x


# -- the parts: views --------------------------------------------------------------------------------
class Real(ViewOp):
    def forward(self, x: Any) -> Any:
        return self.backend.xp.real(x)

    def backward(self, g: Tensor) -> Tensor:
        return complex(g, g.new_zeros(g.shape))

    def backward_arrays(self, g: Any) -> Any:
        return self.backend.make_complex(g, self.backend.xp.zeros_like(g))


class Imag(ViewOp):
    def forward(self, x: Any) -> Any:
        return self.backend.xp.imag(x)

    def backward(self, g: Tensor) -> Tensor:
        return complex(g.new_zeros(g.shape), g)

    def backward_arrays(self, g: Any) -> Any:
        return self.backend.make_complex(self.backend.xp.zeros_like(g), g)


def real(input: Tensor) -> Tensor:
    """The real part of a complex tensor as a writable view; a real tensor itself."""
    if not _is_c(input):
        return input
    return Real.apply(input)  # type: ignore[no-any-return]


def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor as a writable view."""
    if not _is_c(input):
        raise DTypeError(f"imag is not implemented for tensors with non-complex dtypes (got {input.dtype})")
    return Imag.apply(input)  # type: ignore[no-any-return]


class ViewAsReal(ViewOp):
    def forward(self, x: Any) -> Any:
        return self.backend.view_as_real(x)

    def backward(self, g: Tensor) -> Tensor:
        return complex(g[..., 0], g[..., 1])


class ViewAsComplex(ViewOp):
    def forward(self, x: Any) -> Any:
        return self.backend.view_as_complex(x)

    def backward(self, g: Tensor) -> Tensor:
        return view_as_real(g.contiguous())


def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor as a real one with a last dim of 2 (real, imaginary), sharing its memory."""
    if not _is_c(input):
        raise DTypeError(f"view_as_real is only supported for complex tensors, got {input.dtype}")
    return ViewAsReal.apply(input)  # type: ignore[no-any-return]


def view_as_complex(input: Tensor) -> Tensor:
    """A float32/float64 tensor whose last dim is 2 (unit stride) read as complex numbers, sharing memory."""
    if input.dtype.name not in ("float32", "float64"):
        raise DTypeError(f"view_as_complex is only supported for float and double tensors, but got {input.dtype}")
    if input.ndim == 0 or input.shape[-1] != 2:
        raise ShapeError(
            f"view_as_complex: the tensor must have a last dimension of size 2, got shape {tuple(input.shape)}"
        )
    arr = input._data
    itemsize = input.dtype.itemsize
    strides = arr.stride() if callable(getattr(arr, "stride", None)) else tuple(s // itemsize for s in arr.strides)
    if strides[-1] != 1 or any(s % 2 for s in strides[:-1]):
        raise ShapeError(
            "view_as_complex: the tensor must have a last dimension with stride 1 and every other stride "
            f"divisible by 2 (strides in elements: {tuple(strides)}); call .contiguous() first"
        )
    return ViewAsComplex.apply(input)  # type: ignore[no-any-return]


# -- conjugates ------------------------------------------------------------------------------------------
class ConjPhysical(Op):
    saves_inputs = False

    def forward(self, x: Any) -> Any:
        return self.backend.xp.conj(x)

    def backward(self, g: Tensor) -> Tensor:
        return conj_physical(g)


def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate, computed (a real tensor is returned as it is)."""
    return conj_if_complex(input)


def conj(input: Tensor) -> Tensor:
    """The complex conjugate (a real tensor itself). Ember computes it at once: PyTorch's lazy conjugate
    view (``is_conj()``) does not exist here, so ``conj`` equals ``conj_physical``."""
    return conj_if_complex(input)


def resolve_conj(input: Tensor) -> Tensor:
    """``input`` (Ember has no lazy conjugate bit to materialise)."""
    return input


def resolve_neg(input: Tensor) -> Tensor:
    """``input`` (Ember has no lazy negative bit to materialise)."""
    return input


def is_conj(input: Tensor) -> bool:
    """False: Ember's ``conj`` computes the conjugate instead of setting a lazy bit."""
    return False


def is_neg(input: Tensor) -> bool:
    """False: Ember has no lazy negative bit."""
    return False


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims."""
    if input.ndim < 2:
        raise ShapeError(f"adjoint: tensor.adjoint() is only supported on matrices or batches of matrices, got "
                         f"{input.ndim}-D tensor")  # fmt: skip
    return conj(input.mT)


def is_complex(input: Tensor) -> bool:
    """Whether ``input`` has a complex dtype."""
    return _is_c(input)


def isreal(input: Tensor) -> Tensor:
    """True where the element is real (its imaginary part is 0; always for real dtypes)."""
    if not _is_c(input):
        return Tensor._make(input._backend.xp.ones(input._data.shape, dtype=bool), input._backend)
    return imag(input) == 0


# -- magnitude and phase ---------------------------------------------------------------------------------
class Sgn(Op):
    """``z / |z|`` (0 at 0): sign for real tensors."""

    def forward(self, x: Any) -> Any:
        xp = self.backend.xp
        a = xp.abs(x)
        return xp.where(a == 0, 0, x / xp.where(a == 0, 1, a))

    def backward(self, g: Tensor) -> Tensor:
        # s = z/|z|: ds/dz = 1/(2|z|), ds/dz* = -s^2/(2|z|), so grad = (g - s^2 conj(g)) / (2|z|) (0 at 0)
        z = self.inputs[0]  # type: ignore[index]
        a = abs_(z)
        s = sgn(z)
        d = (g - s * s * conj(g)) / (2 * where(a == 0, 1.0, a))
        return where(a == 0, 0.0, d)


def sgn(input: Tensor) -> Tensor:
    """``z / |z|`` for complex tensors (0 at 0); ``sign`` for real ones (PyTorch's ``sgn``)."""
    if not _is_c(input):
        from ._pointwise_unary import sign

        return sign(input)
    return Sgn.apply(input)  # type: ignore[no-any-return]


def abs_(z: Tensor) -> Tensor:
    from ._pointwise_unary import abs

    return abs(z)


class Angle(Op):
    def forward(self, x: Any) -> Any:
        return self.backend.xp.angle(x)

    def backward(self, g: Tensor) -> Tensor:
        z = self.inputs[0]  # type: ignore[index]
        if not _is_c(z):  # piecewise constant
            return g * 0
        # theta = atan2(y, x): dtheta/dx = -y/|z|^2, dtheta/dy = x/|z|^2, so grad = g * i z / |z|^2 (0 at 0)
        a2 = real(z) * real(z) + imag(z) * imag(z)
        d = g * (1j * z) / where(a2 == 0, 1.0, a2)
        return where(a2 == 0, 0.0, d)


def angle(input: Tensor) -> Tensor:
    """The argument (phase) of each element, in radians (0 or pi for real tensors; NaN stays NaN)."""
    return Angle.apply(_float(input))  # type: ignore[no-any-return]


# -- building complex tensors ------------------------------------------------------------------------------
class Complex(Op):
    saves_inputs = False

    def forward(self, re: Any, im: Any) -> Any:
        xp = self.backend.xp
        re, im = xp.broadcast_arrays(re, im)
        return self.backend.make_complex(re, im)

    def backward(self, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        re, im = self.inputs  # type: ignore[misc]
        gre = sum_to(real(g), re.shape) if self._req(0) else None
        return gre, (sum_to(imag(g), im.shape) if self._req(1) else None)


def complex(real: Tensor, imag: Tensor) -> Tensor:
    """The complex tensor ``real + 1j * imag`` (both float32, or both float64; broadcast together)."""
    if not isinstance(real, Tensor) or not isinstance(imag, Tensor):
        raise TypeError("complex(): expected both real and imag to be Tensors")
    if real.dtype is not imag.dtype:
        raise DTypeError(f"complex(): expected real and imag to have the same dtype, but got {real.dtype} and "
                         f"{imag.dtype}")  # fmt: skip
    if real.dtype.name not in ("float32", "float64"):
        raise DTypeError(f"complex(): expected both inputs to be Float or Double tensors but got {real.dtype}")
    out = Complex.apply(real, imag)
    return out  # type: ignore[no-any-return]


class Polar(Op):
    saves_inputs = False
    saves_output = True

    def forward(self, r: Any, theta: Any) -> Any:
        xp = self.backend.xp
        r, theta = xp.broadcast_arrays(r, theta)
        z = self.backend.make_complex(r * xp.cos(theta), r * xp.sin(theta))
        self.keep(z)
        return z

    def backward(self, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        # PyTorch's polar_backward: Re(conj(g) sgn(z)) and Re(conj(g) i z) (the first is the true derivative
        # for abs >= 0, the domain of polar)
        r, theta = self.inputs  # type: ignore[misc]
        z, gc = self.output(), conj(g)
        ga = sum_to(real(gc * sgn(z)), r.shape) if self._req(0) else None
        return ga, (sum_to(real(gc * (z * 1j)), theta.shape) if self._req(1) else None)


def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """The complex tensor with magnitude ``abs`` and phase ``angle``: ``abs * (cos(angle) + 1j sin(angle))``."""
    if abs.dtype is not angle.dtype:
        raise DTypeError(f"polar(): expected abs and angle to have the same dtype, got {abs.dtype} and {angle.dtype}")
    if abs.dtype.name not in ("float32", "float64"):
        raise DTypeError(f"polar(): expected both inputs to be Float or Double tensors but got {abs.dtype}")
    return Polar.apply(abs, angle)  # type: ignore[no-any-return]


def _set_real(self: Tensor, value: Any) -> None:
    real(self).copy_(value)


def _set_imag(self: Tensor, value: Any) -> None:
    imag(self).copy_(value)


def _matrix_adjoint(self: Tensor) -> Tensor:
    if self.ndim != 2:
        raise ShapeError(f"tensor.H is only supported on matrices (2-D tensors), got {self.ndim}-D tensor")
    return adjoint(self)


#: Tensor's properties from this family (bound by ``ops/__init__`` as ``METHODS`` are): ``real`` and ``imag``
#: (writable views of a complex tensor), ``mH`` (conjugate transpose of the last two dims), ``H`` (of a matrix)
PROPERTIES = {
    "real": property(real, _set_real, doc="The real part: a writable view of a complex tensor; a real tensor itself."),
    "imag": property(imag, _set_imag, doc="The imaginary part of a complex tensor (a writable view)."),
    "mH": property(adjoint, doc="The conjugate transpose of the last two dims."),
    "H": property(_matrix_adjoint, doc="The conjugate transpose of a matrix."),
}
