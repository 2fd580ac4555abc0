"""``nn.init.sparse_`` and the deprecated names without the underscore (``nn.init.normal`` ...) beside PyTorch's:
the same structure (zeros per column), the same refusals, the same FutureWarning, and the same values where the
initializer draws nothing."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
@pytest.mark.parametrize(("rows", "sparsity"), [(10, 0.3), (7, 0.5), (4, 0.0), (5, 1.0)])
def test_sparse_zeroes_ceil_sparsity_rows_of_each_column(lib, rows, sparsity):
    lib.manual_seed(0)
    w = lib.empty(rows, 400)
    out = lib.nn.init.sparse_(w, sparsity, std=0.5)
    assert out is w
    a = w.numpy()
    zeros = (a == 0).sum(0)
    assert (zeros == math.ceil(sparsity * rows)).all()
    nz = a[a != 0]
    if nz.size > 1000:
        assert abs(nz.std() - 0.5) < 0.05 and abs(nz.mean()) < 0.05
    first_zero_rows = {tuple(np.flatnonzero(a[:, j] == 0)) for j in range(a.shape[1])}
    assert len(first_zero_rows) > 1 or sparsity in (0.0, 1.0)  # the rows differ from column to column


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_sparse_refuses_other_ranks(lib):
    for shape in ((5,), (2, 3, 4)):
        with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
            lib.nn.init.sparse_(lib.empty(*shape), 0.1)


def test_sparse_with_a_generator_is_reproducible():
    a, b = ember.empty(6, 5), ember.empty(6, 5)
    ember.nn.init.sparse_(a, 0.5, generator=ember.Generator().manual_seed(3))
    ember.nn.init.sparse_(b, 0.5, generator=ember.Generator().manual_seed(3))
    assert np.array_equal(a.numpy(), b.numpy())


OLD = ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
       "kaiming_normal", "orthogonal", "sparse"]  # fmt: skip
ARGS = {"constant": (0.25,), "sparse": (0.5,)}


def _old(lib, name):
    shape = (4, 2, 3) if name == "dirac" else (4, 6)
    lib.manual_seed(1)
    a = lib.empty(*shape)
    with pytest.warns(FutureWarning) as rec:
        out = getattr(lib.nn.init, name)(a, *ARGS.get(name, ()))
    assert out is a
    lib.manual_seed(1)
    b = lib.empty(*shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(lib.nn.init, name + "_")(b, *ARGS.get(name, ()))
    assert np.array_equal(a.numpy(), b.numpy())  # the same initializer
    return str(rec[0].message), getattr(lib.nn.init, name).__name__, a.numpy()


@pytest.mark.parametrize("name", OLD)
def test_deprecated_names_warn_and_initialise_as_torch(name):
    t, e = _old(torch, name), _old(ember, name)
    assert t[:2] == e[:2]
    assert t[0] == f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`."
    if name in ("constant", "eye", "dirac"):  # nothing drawn: the values too
        assert np.array_equal(t[2], e[2])
