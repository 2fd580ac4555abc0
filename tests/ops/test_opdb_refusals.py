"""op_db's error inputs Ember did not refuse (it returned a value where PyTorch raises), now refused with the
exception type PyTorch raises: ``out=`` of another dtype for the ops that want exactly the result's, one Tensor given
to cat/stack and kin, linear_cross_entropy's argument checks, nn.LinearCrossEntropyOptions' checks."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

from .test_opdb_sweep_fixes import same  # noqa: E402 - after the skip, as the module they come from

X = np.random.default_rng(0).random((3, 3)).astype(np.float32)
IDX = np.array([[0, 1, 2]])
#: ops that refuse an ``out`` of another dtype than their result's (each raises under torch: checked here)
EXACT_OUT = {
    "gather": lambda L, x, o: L.gather(x, 0, L.tensor(IDX), out=o),
    "aminmax": lambda L, x, o: L.aminmax(x, dim=0, out=(o, L.empty(0, dtype=L.float64))),
    "multinomial": lambda L, x, o: L.multinomial(x.double(), 2, out=o),
    "take": lambda L, x, o: L.take(x, L.tensor([0, 4]), out=o),
    "take_along_dim": lambda L, x, o: L.take_along_dim(x, L.tensor(IDX), 0, out=o),
    "index_select": lambda L, x, o: L.index_select(x, 0, L.tensor([0, 2]), out=o),
    "masked_select": lambda L, x, o: L.masked_select(x, x > 0.5, out=o),
    "index_add": lambda L, x, o: L.index_add(x, 0, L.tensor([1]), x[:1], out=o),
    "scatter": lambda L, x, o: L.scatter(x, 0, L.tensor(IDX), x, out=o),
    "scatter_add": lambda L, x, o: L.scatter_add(x, 0, L.tensor(IDX), x, out=o),
    "index_copy": lambda L, x, o: L.index_copy(x, 0, L.tensor([1]), x[:1], out=o),
    "diag": lambda L, x, o: L.diag(x, out=o),
    "tril": lambda L, x, o: L.tril(x, out=o),
    "triu": lambda L, x, o: L.triu(x, out=o),
    "sort": lambda L, x, o: L.sort(x, 0, out=(o, L.empty(0, dtype=L.int64))),
    "topk": lambda L, x, o: L.topk(x, 1, out=(o, L.empty(0, dtype=L.int64))),
    "kthvalue": lambda L, x, o: L.kthvalue(x, 1, 0, out=(o, L.empty(0, dtype=L.int64))),
    "max_dim": lambda L, x, o: L.max(x, 0, out=(o, L.empty(0, dtype=L.int64))),
    "cummax": lambda L, x, o: L.cummax(x, 0, out=(o, L.empty(0, dtype=L.int64))),
    "msort": lambda L, x, o: L.msort(x, out=o),
    "renorm": lambda L, x, o: L.renorm(x, 2, 0, 1.0, out=o),
    "cross": lambda L, x, o: L.cross(x, x, dim=0, out=o),
    "matmul": lambda L, x, o: L.matmul(x, x, out=o),
    "mm": lambda L, x, o: L.mm(x, x, out=o),
    "mv": lambda L, x, o: L.mv(x, x[0], out=o),
    "dot": lambda L, x, o: L.dot(x[0], x[1], out=o),
    "addmm": lambda L, x, o: L.addmm(x, x, x, out=o),
    "tensordot": lambda L, x, o: L.tensordot(x, x, out=o),
    "amax": lambda L, x, o: L.amax(x, 0, out=o),
    "amin": lambda L, x, o: L.amin(x, 0, out=o),
    "norm": lambda L, x, o: L.norm(x, dim=0, out=o),
    "matrix_power": lambda L, x, o: L.matrix_power(x, 2, out=o),
    "inverse": lambda L, x, o: L.inverse(x + 3 * L.eye(3), out=o),
    "histc": lambda L, x, o: L.histc(x, out=o),
    "nan_to_num": lambda L, x, o: L.nan_to_num(x, out=o),
    "clamp": lambda L, x, o: L.clamp(x, 0.2, 0.8, out=o),
    "frac": lambda L, x, o: L.frac(x, out=o),
    "sgn": lambda L, x, o: L.sgn(x, out=o),
    "logcumsumexp": lambda L, x, o: L.logcumsumexp(x, 0, out=o),
    "quantile": lambda L, x, o: L.quantile(x, 0.5, out=o),
    "where": lambda L, x, o: L.where(x > 0.5, x, x, out=o),
    "signbit": lambda L, x, o: L.signbit(x, out=o),
    "isposinf": lambda L, x, o: L.isposinf(x, out=o),
    "all": lambda L, x, o: L.all(x, out=o),
}


@pytest.mark.parametrize("name", sorted(EXACT_OUT))
def test_out_of_another_dtype_is_refused_where_pytorch_refuses_it(name):
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            EXACT_OUT[name](L, L.tensor(X), L.empty(0, dtype=L.float64))


#: ops that cast their result into an ``out`` of a wider dtype (PyTorch's rule for the rest)
CAST_OUT = {
    "cat": lambda L, x, o: L.cat([x, x], out=o),
    "stack": lambda L, x, o: L.stack([x, x], out=o),
    "add": lambda L, x, o: L.add(x, x, out=o),
    "max_binary": lambda L, x, o: L.max(x, x, out=o),
    "cumsum": lambda L, x, o: L.cumsum(x, 0, out=o),
    "lerp": lambda L, x, o: L.lerp(x, x, 0.5, out=o),
}


@pytest.mark.parametrize("name", sorted(CAST_OUT))
def test_out_of_a_wider_dtype_still_casts(name):
    same(lambda L: CAST_OUT[name](L, L.tensor(X), L.empty(0, dtype=L.float64)), rtol=1e-6)


def test_std_mean_and_var_mean_take_no_out():
    for L in (torch, ember):
        for fn in (L.std_mean, L.var_mean):
            with pytest.raises(TypeError):
                fn(L.tensor(X), 0, out=(L.empty(0), L.empty(0)))


@pytest.mark.parametrize("op", ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack"])
def test_one_tensor_for_a_sequence_of_tensors_is_refused(op):
    for L in (torch, ember):
        with pytest.raises(TypeError):
            getattr(L, op)(L.ones(2, 3))


LCE_ERRORS = {
    "ignore_index_with_probabilities": lambda L: L.nn.functional.linear_cross_entropy(
        L.ones(2, 3), L.ones(2, 3), L.full((2, 2), 0.5), ignore_index=0
    ),
    "bias_shape": lambda L: L.nn.functional.linear_cross_entropy(
        L.ones(2, 3), L.ones(2, 3), L.tensor([0, 1]), linear_bias=L.ones(3)
    ),
    "k_dim_unbatched": lambda L: L.nn.functional.linear_cross_entropy(
        L.ones(3), L.ones(2, 4, 3), L.zeros(4, dtype=L.int64)
    ),
}


@pytest.mark.parametrize("name", sorted(LCE_ERRORS))
def test_linear_cross_entropy_argument_checks(name):
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            LCE_ERRORS[name](L)


def test_linear_cross_entropy_options():
    kw = {"batch_chunk_size": 2, "acc_policy": "accurate"}
    x, w, t = np.random.default_rng(1).random((4, 3)), np.random.default_rng(2).random((5, 3)), np.array([0, 4, 2, 1])

    def run(L):
        opts = L.nn.LinearCrossEntropyOptions(**kw)
        return L.nn.functional.linear_cross_entropy(L.tensor(x), L.tensor(w), L.tensor(t), options=opts)

    same(run)
    for bad in ({"acc_policy": "x"}, {"chunking_method": "bogus"}, {"batch_chunk_size": 0}, {"acc_dtype": "int64"}):
        for L in (torch, ember):
            b = {**bad, "acc_dtype": L.int64} if "acc_dtype" in bad else bad
            with pytest.raises(ValueError):
                L.nn.LinearCrossEntropyOptions(**b)
