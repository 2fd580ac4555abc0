"""Helpers shared by operators: dim normalisation, undoing broadcasting, type promotion, and the factories for
elementwise Ops (``pointwise_op``, ``_unary``, ``_binary``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import _creation
from .._convert import wrap_int
from .._dtype import DType, get_default_dtype, int64, promote_types, to_complex
from .._errors import DivisionByZeroError, DTypeError, OutOfRangeError, ShapeError
from .._tensor import Tensor
from ..autograd._function import Op


def norm_dim(dim: int, ndim: int, op: str) -> int:
    """``dim`` as a non-negative axis of a rank-``ndim`` tensor, or a clear IndexError (also a RuntimeError)."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise OutOfRangeError(f"{op}: dim {dim} is out of range for a tensor of rank {ndim} (expected {-n}..{n - 1})")
    return dim % n


def norm_dims(dim: Any, ndim: int, op: str) -> tuple[int, ...]:
    """A dim, a sequence of dims or ``None`` (all) as a sorted tuple of non-negative axes.

    A 0-d tensor takes dims -1 and 0 (and gives ``()``); a dim given twice raises, as in PyTorch.
    """
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        d = norm_dim(dim, ndim, op)
        return (d,) if ndim else ()
    dims = [norm_dim(int(d), ndim, op) for d in dim]
    if len(set(dims)) != len(dims):
        rep = next(d for d in dims if dims.count(d) > 1)
        raise ShapeError(f"{op}: dim {rep} appears multiple times in the list of dims {tuple(dim)}")
    return tuple(sorted(dims)) if ndim else ()


def as_shape(shape: Sequence[Any]) -> tuple[int, ...]:
    """``f(2, 3)`` and ``f((2, 3))`` both as ``(2, 3)``."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    return tuple(map(int, shape))


def broadcast_axes(gshape: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The axes of a ``gshape`` array to sum (keeping dims) to undo broadcasting ``shape`` to it."""
    lead = len(gshape) - len(shape)
    return tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and gshape[i + lead] != 1)


_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _combine(dim: DType, zero: DType) -> DType:
    """The dtype of dimensioned operands of dtype ``dim`` with 0-d tensor operands of dtype ``zero``.

    As in PyTorch, a 0-d tensor is weaker than a dimensioned one: it widens the result only when it is of a
    higher category (bool < integer < floating), so ``float32 (n,) + float64 ()`` is float32.
    """
    if dim is zero:
        return dim
    if zero.kind == "c" and dim.kind == "f":  # complex of the dimensioned operand's precision
        return to_complex(dim)
    if _CATEGORY[zero.kind] > _CATEGORY[dim.kind] or dim.kind == "b":
        return promote_types(dim, zero)
    return dim


def promote_tensors(tensors: Sequence[Tensor]) -> list[Tensor]:
    """Tensors cast to their common dtype (the promotion rule of ``promote``, for many operands)."""
    dim: DType | None = None
    zero: DType | None = None
    for t in tensors:
        if t._data.ndim:
            dim = t.dtype if dim is None else promote_types(dim, t.dtype)
        else:
            zero = t.dtype if zero is None else promote_types(zero, t.dtype)
    d = _combine(dim, zero) if dim is not None and zero is not None else dim or zero
    return [t if t.dtype is d else t.to(d) for t in tensors]


def same_dtype(op: str, what: str, *tensors: Any) -> None:
    """PyTorch's rule for products, convolutions and solvers: their tensor operands are never promoted; operands
    of different dtypes (``float32 @ float64``) are an error naming them, not a silent float64 result."""
    d = None
    for t in tensors:
        if not isinstance(t, Tensor):  # None (no bias) or a number: not an operand this rule is about
            continue
        if d is None:
            d = t.dtype
        elif t.dtype is not d:
            got = ", ".join(str(x.dtype) for x in tensors if isinstance(x, Tensor))
            raise DTypeError(f"{op}: expected {what} to have the same dtype, got {got}")


def check_scalar(op: str, value: Any) -> None:
    if not isinstance(value, (int, float, complex)) and not hasattr(value, "dtype"):
        raise TypeError(f"{op}: expected a Tensor or a Python number, got {type(value).__name__}")


def plain_number(v: Any) -> Any:
    """NumPy's float64 and complex128 scalars (subclasses of Python's float and complex) as Python's: PyTorch treats
    them as Python numbers, weak in promotion (``float32 tensor * np.float64(2)`` is float32), where NumPy's own
    arithmetic keeps them float64."""
    if v.__class__ in (int, float, bool, complex) or not isinstance(v, (float, complex)):
        return v
    return complex(v) if isinstance(v, complex) else float(v)


def promote(op: str, a: Any, b: Any) -> tuple[Any, Any]:
    """Type promotion, in one place: cast tensor operands to their common dtype.

    Python scalars are weak (PyTorch / NumPy 2): they never widen a tensor of their own kind; a float
    scalar with an integer or bool tensor gives the default float, an int scalar with a bool tensor int64;
    a complex scalar makes a float tensor complex of its precision, an integer or bool one the default complex.
    A 0-d tensor beside a dimensioned one is weak in the same way, but keeps its own dtype when it is of a
    higher category (PyTorch's rule).
    """
    if a.__class__ is Tensor:  # fast paths: same dtype, or a float scalar with a float tensor
        if b.__class__ is Tensor:
            if a._data.dtype == b._data.dtype:
                return a, b
        elif b.__class__ is float and a._data.dtype in a._backend.float_dtypes:
            return a, b
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if ta and tb:
        if a._data.dtype == b._data.dtype:
            return a, b
        za, zb = not a._data.ndim, not b._data.ndim
        if za == zb:
            d = promote_types(a.dtype, b.dtype)
        else:  # a 0-d tensor beside a dimensioned one is weaker (PyTorch's rule)
            d = _combine(a.dtype, b.dtype) if zb else _combine(b.dtype, a.dtype)
        return (a if a.dtype is d else a.to(d)), (b if b.dtype is d else b.to(d))
    t, s = (a, b) if ta else (b, a)
    if s.__class__ not in (int, float, bool, complex) and isinstance(s, (float, complex)):
        s = plain_number(s)
        a, b = (t, s) if ta else (s, t)
    if not isinstance(s, (int, float)):
        if isinstance(s, complex):
            if t.dtype.kind != "c":
                t = t.to(to_complex(t.dtype if t.dtype.kind == "f" else get_default_dtype()))
            return (t, s) if ta else (s, t)
        if isinstance(s, (list, tuple)) or hasattr(s, "__array__"):
            s = _creation.tensor(s, device=t._backend)
            return promote(op, *((t, s) if ta else (s, t)))
        raise TypeError(f"{op}: expected a Tensor or a Python number, got {type(s).__name__}")
    kind = t.dtype.kind
    if kind in "fc":
        pass
    elif isinstance(s, float):
        t = t.to(get_default_dtype())
    elif kind == "b" and not isinstance(s, bool):
        t = t.to(int64)
    elif s.__class__ is int and op in WRAPPING:
        s = wrap_int(s, t.dtype)
    return (t, s) if ta else (s, t)


#: operators whose Python-int operand PyTorch converts to an integer tensor's dtype modulo 2**bits (the same ring:
#: ``uint8 + -1`` is ``uint8 + 255``); NumPy refuses such a number (OverflowError). Comparisons are not among them:
#: Ember compares the true values (PyTorch's ``uint8 > -1`` is False everywhere)
WRAPPING = frozenset({"add", "sub", "mul", "floordivide", "remainder", "fmod", "divfloor", "divtrunc", "divtruncint",
                      "where", "bitwise_and", "bitwise_or", "bitwise_xor"})  # fmt: skip


def arange_like_dim(shape: tuple[int, ...], dim: int, backend: Any) -> Tensor:
    """``0..shape[dim]-1`` laid along ``dim`` (size 1 elsewhere): compares against gathered indices."""
    xp = backend.xp
    view = [1] * len(shape)
    view[dim] = shape[dim]
    return Tensor._make(xp.arange(shape[dim], dtype=xp.int64).reshape(view), backend)


def broadcast_shapes(*shapes: tuple[int, ...], op: str = "broadcast_shapes") -> tuple[int, ...]:
    """The shape that ``shapes`` broadcast to (an int is a 1-d shape), or a ShapeError naming them."""
    dims = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    out = []
    for i in range(-max((len(s) for s in dims), default=0), 0):
        size = 1
        for s in dims:
            d = int(s[i]) if len(s) >= -i else 1
            if d < 0 or (d != 1 and size != 1 and d != size):
                raise ShapeError(f"{op}: shapes {' and '.join(str(tuple(s)) for s in dims)} cannot broadcast")
            size = d if d != 1 else size
        out.append(size)
    return tuple(out)


def sum_to_array(g: Any, shape: tuple[int, ...]) -> Any:
    """``sum_to`` on a backend array (the first-order fast path)."""
    if g.shape == shape:
        return g
    axes = broadcast_axes(g.shape, shape)
    out = g.sum(axis=axes, keepdims=True) if axes else g
    return out.reshape(shape)


def size_of(a: Any) -> int:
    """The number of elements of a backend array (NumPy's ``.size`` is torch's ``.numel()``)."""
    n = 1
    for s in a.shape:
        n *= s
    return n


def index_out_of_range(idx: Any, low: int, high: int, backend: Any) -> tuple[int, int] | None:
    """``(min, max)`` of ``idx`` when a value lies outside ``[low, high)``, else None.

    Where the host knows the values (``backend.known_range``): where reading a value back is cheap, or where
    the kernel would not report a bad index itself (CuPy wraps it around), it reads them; on torch-CUDA it knows
    the index arrays uploaded from host data and unchanged since. An index computed on torch's CUDA is not read
    back (a hidden sync): the kernel reports it, as PyTorch's CUDA kernels do.
    """
    if not size_of(idx):
        return None
    r = backend.known_range(idx)
    return r if r is not None and (r[0] < low or r[1] >= high) else None


def _shape(x: Any) -> tuple[int, ...]:
    return x._data.shape if isinstance(x, Tensor) else ()


def _float(x: Tensor) -> Tensor:
    """Integer and bool tensors enter floating functions as the default float (PyTorch)."""
    if x.__class__ is Tensor and x._data.dtype in x._backend.float_dtypes:
        return x
    if not isinstance(x, Tensor):
        raise TypeError(f"expected a Tensor, got {type(x).__name__}")
    return x if x.dtype.kind in "fc" else x.to(get_default_dtype())


class StepOp(Op):
    """A piecewise-constant operator: its gradient is zero (PyTorch still records a grad_fn)."""

    saves_inputs = False

    def backward(self, g: Tensor) -> Any:
        grads = tuple(x.new_zeros(x.shape) if self._req(i) else None for i, x in enumerate(self.inputs or ()))
        return grads if len(grads) > 1 else grads[0]


# Operators that divide integers by integers: a zero divisor raises, as in PyTorch (NumPy gives 0 and warns).
_INT_DIVISIONS = {"FloorDivide": "floor_divide", "Remainder": "remainder", "DivFloor": "div", "DivTrunc": "div",
                  "DivTruncInt": "div"}  # fmt: skip


def _check_int_divisor(name: str, a: Any, b: Any) -> None:
    """Raise when integer ``a // b`` or ``a % b`` (after promotion) has a zero in ``b``."""
    ref = a if isinstance(a, Tensor) else b
    if not isinstance(ref, Tensor) or ref.dtype.kind not in "biu":
        return
    if isinstance(b, Tensor):
        if b.dtype.kind in "biu" and not b.is_meta and bool(b._backend.xp.any(b._data == 0)):
            raise DivisionByZeroError(f"{name}: integer division by zero (the divisor tensor holds a 0)")
    elif isinstance(b, int) and b == 0:
        raise DivisionByZeroError(f"{name}: integer division by zero")


# Binary operators that order, round or take parts of real numbers: PyTorch refuses complex operands.
_REAL_ONLY = frozenset({
    "Copysign", "DivFloor", "DivTrunc", "DivTruncInt", "FloorDivide", "Fmax", "Fmin", "Fmod", "Heaviside", "Hypot",
    "Logaddexp2", "Maximum", "Minimum", "Nextafter", "Remainder", "Xlogy", "Less", "LessEqual", "Greater",
    "GreaterEqual",
})  # fmt: skip


def real_only(op: str, *xs: Any) -> None:
    """Refuse complex tensors (or Python complex numbers) in an operator defined for real numbers only, with
    PyTorch's error (a ``DTypeError``: both TypeError and RuntimeError)."""
    for x in xs:
        if (x.__class__ is Tensor and x._data.dtype in x._backend.complex_dtypes) or isinstance(x, complex):
            what = x.dtype if isinstance(x, Tensor) else "a Python complex"
            raise DTypeError(f"{op} is not supported for complex tensors (got {what}); take .real, .imag, "
                             ".abs() or .angle() first")  # fmt: skip


def _is_bool(x: Any) -> bool:
    return isinstance(x, bool) or (isinstance(x, Tensor) and x.dtype.kind == "b")


def _binary(cls: type[Op], a: Any, b: Any) -> Tensor:
    # fast path: a float tensor with a float scalar or a tensor of its dtype (no promotion, no integer
    # division to check)
    if not (
        a.__class__ is Tensor
        and a._data.dtype in a._backend.float_dtypes
        and (b.__class__ is float or (b.__class__ is Tensor and b._data.dtype == a._data.dtype))
    ):
        a, b = promote(cls.__name__.lower(), a, b)
        if cls.__name__ in _INT_DIVISIONS:
            _check_int_divisor(_INT_DIVISIONS[cls.__name__], a, b)
        if cls.__name__ in _REAL_ONLY:
            real_only(cls.__name__.lower(), a, b)
    try:
        return cls.apply(a, b)
    except (ValueError, RuntimeError) as e:  # NumPy: "cannot be broadcast"; torch: "must match the size"
        if not isinstance(e, ShapeError) and ("broadcast" in str(e) or "must match the size" in str(e)):
            raise ShapeError(
                f"{cls.__name__.lower()}: shapes {tuple(_shape(a))} and {tuple(_shape(b))} cannot be broadcast together"
            ) from None
        raise


#: Python numbers an arithmetic operator's kernel may pass as ``backend.keep_number``'s operand (not bool)
NUMBERS = (float, int)


Array = Any


Fwd = Callable[[Any, Array], Array]


Deriv = Callable[[Tensor, Tensor], Tensor]


def pointwise_op(
    name: str, fwd: Callable[..., Array], deriv: Callable[..., Tensor] | None, uses: str = "x", kernel: bool = False
) -> Any:
    """An Op class for one elementwise function ``fwd(xp, x, *params)`` with derivative ``deriv(x, y, *params)``.

    ``uses`` says what backward reads: ``"x"`` (the input) or ``"y"`` (the output); the derivative is
    written with Tensor operations, so higher-order gradients work. Extra ``params`` are plain numbers.
    ``kernel=True``: ``fwd`` takes the backend instead of ``xp`` (it calls a backend kernel, e.g. ``erf``).
    """

    class _Op(Op):
        saves_inputs = uses == "x"
        saves_output = uses == "y"
        differentiable = deriv is not None

        def forward(self, x: Any, *params: Any) -> Any:
            y = fwd(self.backend if kernel else self.backend.xp, x, *params)
            if self.saves_output:
                self.keep(y)
            return y

        def backward(self, g: Tensor) -> Any:
            from ._pointwise_complex import cj

            ins = self.inputs or ()
            x = ins[0] if self.saves_inputs else None
            y = self.output() if self.saves_output else None
            d = g * cj(deriv(x, y, *ins[1:]))  # type: ignore[misc]  # the conjugate derivative for complex
            return (d,) + (None,) * (len(ins) - 1) if len(ins) > 1 else d

    _Op.__name__ = _Op.__qualname__ = "".join(p.capitalize() for p in name.split("_"))
    return _Op


def _unary(
    name: str,
    fwd: Fwd,
    deriv: Deriv | None,
    *,
    uses: str = "x",
    floating: bool = True,
    kernel: bool = False,
    real: bool = False,
) -> Callable[..., Tensor]:
    """Make an Op class and its public function for one elementwise operator (``real``: refuses complex)."""
    op = pointwise_op(name, fwd, deriv, uses, kernel)

    def fn(input: Tensor) -> Tensor:
        if input.__class__ is Tensor and input._data.dtype in input._backend.float_dtypes:
            return op.apply(input)
        if real:
            real_only(name, input)
        return op.apply(_float(input) if floating else input)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (PyTorch semantics)."
    return fn


def _nodiff(name: str, ufunc: str) -> type[Op]:
    """An operator without a gradient computing ``xp.<ufunc>(a, b)``."""

    class _Op(Op):
        differentiable = False

        def forward(self, a: Any, b: Any) -> Any:
            return getattr(self.backend.xp, ufunc)(a, b)

    _Op.__name__ = _Op.__qualname__ = name
    return _Op


def int_power(backend: Any, a: Any, b: Any) -> Any:
    """``a ** b`` of integer arrays (``a`` may be a Python int) where ``b`` holds negative exponents, as PyTorch:
    ``1 ** -n = 1``, ``(-1) ** -n = +-1``, any other base 0 (NumPy refuses them); None when that is not the case."""
    xp = backend.xp
    if isinstance(b, (int, float, complex)) or backend.dtype_of(b).kind not in "iu":
        return None
    if not (isinstance(a, int) or (not isinstance(a, (float, complex)) and backend.dtype_of(a).kind in "iu")):
        return None
    if not bool(xp.any(b < 0)):
        return None
    r = xp.power(a, xp.where(b < 0, 0, b))
    odd = 1 - 2 * (b % 2)  # (-1) ** b
    inv = (
        (1 if a == 1 else odd if a == -1 else 0)
        if isinstance(a, int)
        else xp.where(a == 1, 1, xp.where(a == -1, odd, 0))
    )
    return xp.astype(xp.where(b < 0, inv, r), r.dtype)
