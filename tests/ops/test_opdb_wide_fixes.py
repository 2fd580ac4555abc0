"""Wrong answers that ``tools/opdb_sweep_wide.py`` found (every op_db sample, integer/bool/half dtypes, second-order
gradients, views): the same code under Ember and torch, values, dtypes, shapes and gradients compared."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

from .test_opdb_sweep_fixes import same  # noqa: E402 - after the skip, as the module they come from


# -- masked.norm: ord=-inf, 0, negative (was: 1.0 for -inf, sum(|x|**ord)**(1/ord) otherwise) ------------------------
@pytest.mark.parametrize("ord", [-math.inf, -2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("masked", [False, True], ids=["nomask", "mask"])
def test_masked_norm_orders(ord, masked):
    x = np.array([[-4.8, 2.0, 0.5], [1.5, -0.25, 3.0]])
    m = np.array([[True, False, True], [True, True, False]])

    def run(L):
        t = L.tensor(x, dtype=L.float64, requires_grad=True)
        y = L.masked.norm(t, ord, 1, mask=L.tensor(m) if masked else None)
        (g,) = L.autograd.grad(y.sum(), [t], allow_unused=True)  # (ord 0: no gradient in either library)
        return y, L.zeros_like(t) if g is None else g

    same(run)


def test_masked_norm_of_a_0d_tensor():
    same(lambda L: L.masked.norm(L.tensor(-4.8269849, dtype=L.float64), -math.inf))


# -- integer dtypes kept by masked reductions and by dtype= of sum/prod/cumsum/cumprod/nansum ------------------------
INT_DTYPE_CASES = {
    "masked.sum": lambda L, x, m: L.masked.sum(x, 1, mask=m),
    "masked.amax": lambda L, x, m: L.masked.amax(x, 1, mask=m),
    "masked.amin": lambda L, x, m: L.masked.amin(x, 0, mask=m),
    "masked.prod": lambda L, x, m: L.masked.prod(x, 1, mask=m),
    "masked.prod_nodims": lambda L, x, m: L.masked.prod(x[0, 0], dim=(), mask=None),
    "masked.cumsum": lambda L, x, m: L.masked.cumsum(x, 1, mask=m),
    "masked.cumprod": lambda L, x, m: L.masked.cumprod(x, 1, mask=m),
    "masked.logsumexp": lambda L, x, m: L.masked.logsumexp(x.to(L.int64), 1, mask=m),
    "sum_dtype": lambda L, x, m: L.sum(x, 1, dtype=L.int32),
    "sum_dtype_all": lambda L, x, m: L.sum(x, dtype=L.int16),
    "sum_bool": lambda L, x, m: L.sum(x, 0, dtype=L.bool),
    "nansum_dtype": lambda L, x, m: L.nansum(x, dtype=L.int32),
    "prod_dtype": lambda L, x, m: L.prod(x, 1, dtype=L.int32),
    "prod_dtype_all": lambda L, x, m: L.prod(x, dtype=L.int32),
    "prod_bool": lambda L, x, m: L.prod(x, 0, dtype=L.bool),
    "cumsum_dtype": lambda L, x, m: L.cumsum(x, 1, dtype=L.int8),
    "cumprod_dtype": lambda L, x, m: L.cumprod(x, 1, dtype=L.int32),
    "cumprod_wraps": lambda L, x, m: L.cumprod(x * 100, 1, dtype=L.int8),
}


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
@pytest.mark.parametrize("name", sorted(INT_DTYPE_CASES))
def test_integer_reductions_keep_pytorchs_dtype(name, dtype):
    x = np.array([[3, 1, 4], [1, 5, 9]])
    m = np.array([[True, False, True], [True, True, False]])
    same(lambda L: INT_DTYPE_CASES[name](L, L.tensor(x, dtype=getattr(L, dtype)), L.tensor(m)))


# -- quantile's gradient with respect to a q that requires grad (was zero) --------------------------------------------
@pytest.mark.parametrize("op", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "nearest", "midpoint"])
@pytest.mark.parametrize("qshape", ["0d", "1d"])
def test_quantile_gradient_with_respect_to_q(op, interpolation, qshape):
    x = np.array([[-4.8, 2.0, 0.5, 7.0], [1.5, -0.25, 3.0, np.nan if op == "nanquantile" else 2.5]])
    q = np.array(0.3) if qshape == "0d" else np.array([0.2, 0.55, 0.9])

    def run(L):
        t = L.tensor(x, dtype=L.float64, requires_grad=True)
        qt = L.tensor(q, dtype=L.float64, requires_grad=True)
        y = getattr(L, op)(t, qt, 1, interpolation=interpolation)
        w = L.tensor(np.arange(1.0, y.numel() + 1.0).reshape(tuple(y.shape)), dtype=L.float64)
        gt, gq = L.autograd.grad((y * w).sum(), [t, qt], allow_unused=True)  # (q unused but by "linear")
        return y, gt, L.zeros_like(qt) if gq is None else gq

    same(run)


# -- result dtypes of integer/bool inputs (op_db's int/bool samples) --------------------------------------------------
DTYPE_CASES = {
    "square_bool": lambda L: L.square(L.tensor([True, False])),
    "sign_bool": lambda L: L.sign(L.tensor([True, False])),
    "sgn_bool": lambda L: L.sgn(L.tensor([True, False])),
    "heaviside_int": lambda L: L.heaviside(L.tensor([1, 0, -1]), L.tensor([5])),
    "heaviside_int32": lambda L: L.heaviside(L.tensor([1, 0, -1], dtype=L.int32), L.tensor([7], dtype=L.int32)),
    "index_copy_bool": lambda L: L.index_copy(
        L.tensor([[True, False], [False, False]]), 0, L.tensor([1]), L.tensor([[True, True]])
    ),
    "logspace_int64": lambda L: L.logspace(0, 3, 4, dtype=L.int64),
    "logspace_int32_fractional": lambda L: L.logspace(-1, 2.5, 5, base=2, dtype=L.int32),
    "hardtanh_int": lambda L: L.nn.functional.hardtanh(L.tensor([-3, 0, 3])),
    "hardtanh_int_bounds": lambda L: L.nn.functional.hardtanh(L.tensor([-3, 0, 3]), -0.5, 1.5),
    "relu6_int32": lambda L: L.nn.functional.relu6(L.tensor([-3, 0, 9], dtype=L.int32)),
    "all_uint8": lambda L: L.all(L.tensor([1, 2], dtype=L.uint8)),
    "any_uint8_dim": lambda L: L.tensor([[1, 0], [0, 0]], dtype=L.uint8).any(1),
    "all_uint8_keepdim": lambda L: L.tensor([[1, 3], [0, 2]], dtype=L.uint8).all(0, keepdim=True),
    "any_int8": lambda L: L.any(L.tensor([[1, 0]], dtype=L.int8)),
    "histogram_empty": lambda L: L.histogram(L.zeros(0, dtype=L.float64), 4),
    "histogramdd_empty": lambda L: L.histogramdd(L.zeros(0, 2, dtype=L.float64), [2, 3]).bin_edges,
}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(DTYPE_CASES))
def test_result_dtypes_and_values(name):
    same(DTYPE_CASES[name])


def _device(L):
    """Where ``L`` computes: Ember's default device; PyTorch's reference on the same kind of device."""
    kind = ember.get_default_device().type
    return None if L is ember else ("cuda" if kind == "cuda" else "cpu")


@pytest.mark.parametrize(
    "args",
    [(0.5, 2.7, 3, 3, "uint8"), (0, 5, 6, 3, "int64"), (-1.5, 4.2, 5, 3, "int32"), (0, 4, 5, 7, "int16"),
     (0, 6, 4, 5, "int64"), (1, 2, 3, 10, "int8"), (0, 3, 4, 2.5, "int64")],
)  # fmt: skip
def test_integer_logspace_gives_pytorchs_values_on_the_device(args):
    """An integer logspace truncates the powers as PyTorch's kernel on the device computes them: the CPU's in
    float64, CUDA's in float32 (``powf``: 3 ** 1 may come out below 3 and truncate to 2 there)."""
    lo, hi, steps, base, dtype = args
    e = ember.logspace(lo, hi, steps, base=base, dtype=getattr(ember, dtype))
    t = torch.logspace(lo, hi, steps, base=base, dtype=getattr(torch, dtype), device=_device(torch))
    assert e.dtype.name == dtype and e.device.type == ember.get_default_device().type
    assert e.tolist() == t.tolist()


@pytest.mark.parametrize("args", [(0.5, 5.7, 2.5), (-2.7, 3.2, 1.9), (0, 3.5, 1.5), (-1.5, 1.5, 1), (5.5, -1, -1.5)])
@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_arange_of_an_integer_dtype_truncates_its_arguments(args, dtype):
    """(PyTorch sizes an int32/int16/uint8 arange from the untruncated bounds but steps from the truncated start by
    the truncated step, e.g. arange(-2.7, 3.2, 1.9, dtype=int32) = [-2, -1, 0, 1]; Ember uses int64's rule for all
    integer dtypes: [-2, -1, 0, 1, 2].)"""
    same(lambda L: L.arange(*args, dtype=getattr(L, dtype)))


def test_arange_whose_step_truncates_to_zero_is_refused():
    # (PyTorch 2.11 divides by the truncated step: SIGFPE, the process dies; fixed by pytorch/pytorch#183329)
    if tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 13):
        with pytest.raises(ValueError):
            torch.arange(0, 2, 0.5, dtype=torch.int64)
    with pytest.raises(ValueError):
        ember.arange(0, 2, 0.5, dtype=ember.int64)


# -- half-precision norms accumulate in float32 (300, 400 gave inf instead of 500; normalize gave zeros) -------------
HALF_NORMS = {
    "vector_norm": lambda L, x: L.linalg.vector_norm(x),
    "vector_norm_6": lambda L, x: L.linalg.vector_norm(x, 6),
    "vector_norm_dim": lambda L, x: L.linalg.vector_norm(x, 3, dim=1),
    "norm": lambda L, x: L.norm(x),
    "norm_1_dim": lambda L, x: x.norm(1, 1),
    "dist": lambda L, x: L.dist(x, x.flip(1)),
    "normalize": lambda L, x: L.nn.functional.normalize(x),
    "linalg_norm": lambda L, x: L.linalg.norm(x),
    "cumsum": lambda L, x: L.cumsum(x * 150, 1),
}


@pytest.mark.parametrize("name", sorted(HALF_NORMS))
def test_float16_norms_do_not_overflow(name):
    """Values as PyTorch's float16 ones; gradients as PyTorch's float64 ones rounded (PyTorch's own float16
    backward of the 3- and 6-norms overflows to nan: x**5 is out of float16's range)."""
    x = np.array([[300.0, 400.0, -250.0], [-8.5, 120.0, 60.0]])

    def run(L, dtype):
        t = L.tensor(x, dtype=getattr(L, dtype), requires_grad=True)
        y = HALF_NORMS[name](L, t)
        w = L.tensor(np.linspace(1.0, 2.0, y.numel()).reshape(tuple(y.shape)), dtype=L.float64)
        (g,) = L.autograd.grad((y.double() * w).sum(), [t])
        return y, g

    y, g = run(ember, "float16")
    ty, _ = run(torch, "float16")
    _, tg = run(torch, "float64")
    assert y.dtype is ember.float16 and g.dtype is ember.float16
    np.testing.assert_allclose(y.detach().numpy().astype(np.float64), ty.detach().numpy().astype(np.float64), rtol=2e-3)
    if name != "normalize":  # (its float16 gradient cancels: x/|x| - x (x.g)/|x|^3, good to ~1e-3 either way)
        np.testing.assert_allclose(g.numpy().astype(np.float64), tg.numpy(), rtol=1e-2, atol=1e-4)


def test_bfloat16_vector_norm_does_not_overflow():
    if not (be := ember.backends.get_backend()).supports_bfloat16:
        pytest.skip(f"the {be.name} backend has no bfloat16")
    x = ember.tensor([3.0e19, 4.0e19], dtype=ember.bfloat16)  # squares overflow float32's range too
    want = torch.linalg.vector_norm(torch.tensor([3.0e19, 4.0e19], dtype=torch.bfloat16))
    assert float(ember.linalg.vector_norm(x).float().item()) == pytest.approx(float(want.float()), rel=1e-2)


# -- scatter_reduce/index_reduce with include_self=False keep an integer/bool input's dtype (were float32/int64) -------
@pytest.mark.filterwarnings("ignore")  # (index_reduce is in beta in PyTorch)
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "float64"])
def test_scatter_reduce_without_self_keeps_the_dtype(reduce, dtype):
    if dtype == "bool" and reduce == "mean":
        pytest.skip("PyTorch refuses a bool mean")
    x = np.array([[5, 1, 6], [0, 4, 2], [3, 3, 7]])
    src = np.array([[9, 3, 0], [2, 8, 1]])
    idx = np.array([[0, 2, 2], [0, 0, 1]])

    def run(L):
        t = L.tensor(x, dtype=getattr(L, dtype))
        s = L.tensor(src, dtype=getattr(L, dtype))
        a = t.scatter_reduce(0, L.tensor(idx), s, reduce, include_self=False)
        if reduce == "sum" or dtype == "bool":  # (index_reduce: no sum; PyTorch has no bool kernel)
            return a
        b = t.index_reduce(0, L.tensor([2, 0]), s, reduce, include_self=False)
        return a, b

    if ember.get_default_device().type == "cuda":  # PyTorch's CUDA has no bool scatter kernel (prod, amax, amin)
        with torch.device("cuda"):
            try:
                run(torch)
            except Exception as e:  # Ember on torch-CUDA raises as torch there; one with the kernel (CuPy) computes
                try:
                    run(ember)
                except Exception as mine:
                    assert type(mine) is type(e), f"{type(mine).__name__}: {mine} (PyTorch: {type(e).__name__}: {e})"
                    return
    same(run)


# -- view_copy of a tensor whose strides a view cannot take (raised); sum_to_size of uint8 (gave uint64) ------------
def test_view_copy_of_a_transposed_tensor():
    same(lambda L: L.view_copy(L.arange(12.0).reshape(3, 4).mT, (12,)))
    same(lambda L: L.view_copy(L.arange(12.0).reshape(3, 4)[:, ::2], (2, 3)))


@pytest.mark.parametrize("dtype", ["uint8", "int32", "bool", "int64"])
def test_sum_to_size_sums_integers_as_int64(dtype):
    same(lambda L: L.tensor([[1, 2], [3, 0]], dtype=getattr(L, dtype)).sum_to_size(1, 2))
    same(lambda L: L.tensor([[1, 2], [3, 0]], dtype=getattr(L, dtype)).sum_to_size(2, 2))


# -- layer_norm's second-order gradients when normalized_shape is the whole input (the torch backend's sum over
#    no dims summed everything: "backward returned a gradient of shape ()") -------------------------------------------
@pytest.mark.parametrize("shape", [(1, 2, 3), (3,), (2, 3)])
def test_layer_norm_second_order_over_all_dims(shape):
    rng = np.random.default_rng(0)
    x0, w0, b0 = rng.standard_normal(shape), rng.standard_normal(shape[-2:]), rng.standard_normal(shape[-2:])

    def run(L):
        x, w, b = (L.tensor(v, dtype=L.float64, requires_grad=True) for v in (x0, w0, b0))
        y = L.nn.functional.layer_norm(x, tuple(shape[-2:]), w, b)
        gs = L.autograd.grad((y * L.tensor(np.cos(x0), dtype=L.float64)).sum(), [x, w, b], create_graph=True)
        ggs = L.autograd.grad(sum((g * g).sum() for g in gs), [x, w, b], allow_unused=True)
        return tuple(L.zeros_like(t) if g is None else g for g, t in zip(ggs, (x, w, b)))

    same(run, rtol=1e-9, atol=1e-10)


# -- integer tensors to negative integer tensor powers (NumPy raised ValueError; PyTorch computes 0, 1 or +-1) ---------
INT_POW = {
    "tensor_tensor": lambda L: L.tensor([2, 1, -1, -1, 0, 3, -2]) ** L.tensor([-1, -3, -3, -2, 2, 2, -1]),
    "number_base": lambda L: 2 ** L.tensor([-1, 0, 3]),
    "minus_one_base": lambda L: (-1) ** L.tensor([-1, -2, 3]),
    "one_base": lambda L: 1 ** L.tensor([-1, -2, 3]),
    "int32_broadcast": lambda L: L.pow(L.tensor([[2], [-1], [1]], dtype=L.int32), L.tensor([-1, -2, 3], dtype=L.int32)),
}


@pytest.mark.parametrize("name", sorted(INT_POW))
def test_integer_pow_with_negative_exponents(name):
    same(INT_POW[name])


def test_integer_tensor_to_a_negative_number_is_refused_as_in_pytorch():
    with pytest.raises(RuntimeError):
        torch.tensor([2, 3]) ** -1
    with pytest.raises(RuntimeError):
        ember.tensor([2, 3]) ** -1


# -- diag_embed's dim1/dim2 (raised TypeError: PyTorch's signature is diag_embed(input, offset, dim1, dim2)) --------
@pytest.mark.parametrize("offset", [0, 1, -2])
@pytest.mark.parametrize("dims", [(-2, -1), (0, 2), (2, 0), (1, -1), (0, 1)])
def test_diag_embed_dims(offset, dims):
    x = np.arange(6.0).reshape(2, 3)

    def run(L):
        t = L.tensor(x, dtype=L.float64, requires_grad=True)
        y = L.diag_embed(t, offset, *dims)
        (g,) = L.autograd.grad((y * L.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))).sum(), [t])
        return y, g

    same(run)


def test_diag_embed_identical_dims_are_refused():
    with pytest.raises(RuntimeError):
        torch.diag_embed(torch.ones(2, 3), 0, 1, 1)
    with pytest.raises(RuntimeError):
        ember.diag_embed(ember.ones(2, 3), 0, 1, 1)


@pytest.mark.parametrize("zeros", [1, 2], ids=["one-zero", "two-zeros"])
def test_scatter_reduce_prod_second_order_gradient_with_zeros(zeros: int) -> None:
    """The product of a group's other elements, read by the first backward where the group holds one zero, is now
    differentiated by a second backward (it was detached: second-order gradients up to 12.5 off PyTorch's)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x, s, w = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    x[1, 0] = s[2, 1] = 0.0
    if zeros == 2:
        s[0, 0] = 0.0
    idx = np.array([[0, 1, 2], [1, 0, 3], [3, 2, 1], [0, 0, 0], [2, 3, 1]])
    res = []
    for lib in (ember, torch):
        X, S = lib.tensor(x, requires_grad=True), lib.tensor(s, requires_grad=True)
        y = X.scatter_reduce(0, lib.tensor(idx), S, "prod")
        gx, gs = lib.autograd.grad((y * lib.tensor(w)).sum(), (X, S), create_graph=True)
        hx, hs = lib.autograd.grad((gx * gx).sum() + (gs * gs).sum(), (X, S))
        res.append([np.asarray(t.detach().tolist()) for t in (gx, gs, hx, hs)])
    for ours, theirs in zip(*res, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


# -- one-operand integer einsum that sums a subscript: PyTorch's sum, into int64 (Ember kept int32/uint8) ----------
@pytest.mark.parametrize("dtype", ["int32", "uint8", "int8", "int16", "int64", "bool"])
@pytest.mark.parametrize("equation", ["ij->", "ij->i", "ij->j", "ii->", "ii", "...j->...", "ij->ji", "ii->i"])
def test_one_operand_integer_einsum_dtype(equation, dtype):
    x = np.array([[100, 90], [3, 120]])

    def run(L):
        t = L.tensor(x > 50) if dtype == "bool" else L.tensor(x, dtype=getattr(L, dtype))
        return L.einsum(equation, t)

    same(run)


# -- bool addr: beta and alpha as truth values, a bool result (Ember gave int64 for alpha/beta other than 0/1) -------
@pytest.mark.parametrize(
    "kw", [{}, {"beta": 0}, {"alpha": 2}, {"beta": 2, "alpha": 0}, {"alpha": False}, {"beta": 3, "alpha": 5}]
)
def test_bool_addr_is_bool(kw):
    same(
        lambda L: L.addr(
            L.tensor([[True, False], [False, True]]), L.tensor([True, False]), L.tensor([True, True]), **kw
        )
    )


# -- a Python int beside a small integer tensor: PyTorch converts it modulo 2**bits (uint8 + -1 adds 255); Ember's
# NumPy kernels raised OverflowError. Creation and fill_ convert as PyTorch's checked_convert (uint8 takes -255..255)
U8 = [0, 5, 250, 255]
I8 = [1, -2, 127, -128]
WRAPS = {
    "add-1": lambda L, u, i: u + (-1),
    "radd-1": lambda L, u, i: -1 + u,
    "sub300": lambda L, u, i: u - 300,
    "mul-2": lambda L, u, i: u * -2,
    "add_alpha-1": lambda L, u, i: L.add(u, u, alpha=-1),
    "add_number_alpha-1": lambda L, u, i: L.add(u, 1, alpha=-1),
    "sub_alpha-3": lambda L, u, i: L.sub(u, u, alpha=-3),
    "rsub-1": lambda L, u, i: L.rsub(u, -1),
    "rsub_alpha-1": lambda L, u, i: L.rsub(u, 3, alpha=-1),
    "floordiv-2": lambda L, u, i: u // -2,
    "remainder-3": lambda L, u, i: u % -3,
    "fmod-3": lambda L, u, i: L.fmod(u, -3),
    "and-1": lambda L, u, i: u & -1,
    "or-2": lambda L, u, i: u | -2,
    "xor-1": lambda L, u, i: u ^ -1,
    "int8+200": lambda L, u, i: i + 200,
    "int8*2**40": lambda L, u, i: i * 2**40,
    "where-1": lambda L, u, i: L.where(u > 3, u, -1),
    "masked_fill-1": lambda L, u, i: u.masked_fill(u > 3, -1),
    "fill_-1": lambda L, u, i: u.clone().fill_(-1),
    "setitem-1": lambda L, u, i: u.clone().__setitem__(0, -1) or u,
    "full_like-5": lambda L, u, i: L.full_like(u, -5),
    "full-255": lambda L, u, i: L.full((2,), -255, dtype=L.uint8),
    "scalar_tensor-5": lambda L, u, i: L.scalar_tensor(-5, dtype=L.uint8),
    "tensor-1": lambda L, u, i: L.tensor([-1, 3], dtype=L.uint8),
    "index_add_alpha-1": lambda L, u, i: u.index_add(0, L.tensor([0, 1]), L.tensor([1, 2], dtype=L.uint8), alpha=-1),
    "iadd-1": lambda L, u, i: u.clone().__iadd__(-1),
    "imul-3": lambda L, u, i: u.clone().__imul__(-3),
    "addcmul-1": lambda L, u, i: L.addcmul(u, u, u, value=-1),
}


@pytest.mark.parametrize("name", sorted(WRAPS))
def test_python_ints_wrap_into_small_integer_dtypes(name):
    same(lambda L: WRAPS[name](L, L.tensor(U8, dtype=L.uint8), L.tensor(I8, dtype=L.int8)))


@pytest.mark.parametrize(
    "call",
    [
        lambda L: L.full((2,), 256, dtype=L.uint8),
        lambda L: L.full((2,), -256, dtype=L.uint8),
        lambda L: L.zeros(2, dtype=L.int8).fill_(128),
        lambda L: L.tensor([200], dtype=L.int8),
        lambda L: L.tensor([1]) + 2**70,
    ],
    ids=["full256", "full-256", "int8_fill128", "int8_tensor200", "int64+2**70"],
)
def test_python_ints_pytorch_cannot_convert_are_refused(call):
    for L in (torch, ember):
        with pytest.raises((RuntimeError, OverflowError)):
            call(L)
