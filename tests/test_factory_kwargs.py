"""PyTorch's factory keywords on the creation functions (``layout``, ``pin_memory``, ``memory_format``, ``out``,
``requires_grad`` on the ``*_like`` ones), run as the same code under both libraries."""

from __future__ import annotations

from typing import Any

import pytest

import ember

torch = pytest.importorskip("torch")


def _calls(lib: Any) -> dict[str, Any]:
    x = lib.ones(2, 3)
    return {
        "zeros layout": lambda: lib.zeros(2, layout=lib.strided),
        "zeros out": lambda: lib.zeros(2, out=lib.empty(2)),
        "zeros out int": lambda: lib.zeros(2, out=lib.empty(3, dtype=lib.int64)),
        "ones layout": lambda: lib.ones(2, 2, layout=lib.strided),
        "empty memory_format": lambda: lib.empty(1, 2, 3, 4, memory_format=lib.channels_last).shape,
        "empty pin": lambda: lib.empty(2, pin_memory=False).shape,
        "full layout": lambda: lib.full((2,), 1.5, layout=lib.strided),
        "full out": lambda: lib.full((2, 2), 7, out=lib.empty(0, dtype=lib.int32)),
        "arange out": lambda: lib.arange(3, out=lib.empty(0)),
        "rand pin": lambda: lib.rand(2, pin_memory=False).shape,
        "randn layout": lambda: lib.randn(2, layout=lib.strided).shape,
        "randint layout": lambda: lib.randint(3, (2,), layout=lib.strided).shape,
        "randperm layout": lambda: lib.randperm(3, layout=lib.strided).shape,
        "eye layout": lambda: lib.eye(2, layout=lib.strided),
        "eye out": lambda: lib.eye(2, out=lib.empty(2, 2, dtype=lib.float64)),
        "linspace layout": lambda: lib.linspace(0, 1, 3, layout=lib.strided, dtype=lib.float64),
        "tensor pin": lambda: lib.tensor([1], pin_memory=False),
        "zeros_like preserve": lambda: lib.zeros_like(x, memory_format=lib.preserve_format),
        "zeros_like layout": lambda: lib.zeros_like(x, layout=lib.strided),
        "empty_like contiguous": lambda: lib.empty_like(x, memory_format=lib.contiguous_format).shape,
        "ones_like preserve": lambda: lib.ones_like(x, memory_format=lib.preserve_format),
        "full_like preserve": lambda: lib.full_like(x, 2, memory_format=lib.preserve_format),
        "rand_like requires_grad": lambda: lib.rand_like(x, requires_grad=True).requires_grad,
        "randn_like preserve": lambda: lib.randn_like(x, memory_format=lib.preserve_format).shape,
        "randint_like preserve": lambda: lib.randint_like(x, 3, memory_format=lib.preserve_format).dtype,
        "new_empty layout": lambda: x.new_empty(2, layout=lib.strided).shape,
        "new_zeros pin": lambda: x.new_zeros(2, pin_memory=False),
        "new_tensor requires_grad": lambda: x.new_tensor([1.0], requires_grad=True).requires_grad,
        "cpu memory_format": lambda: x.cpu(memory_format=lib.preserve_format),
        "tril_indices layout": lambda: lib.tril_indices(3, 3, layout=lib.strided),
        "hann_window layout": lambda: lib.hann_window(4, layout=lib.strided, dtype=lib.float64),
        "empty_permuted": lambda: lib.empty_permuted((2, 3, 4), (0, 2, 1)).stride(),
        # refusals
        "zeros memory_format": lambda: lib.zeros(2, memory_format=lib.channels_last),
        "empty channels_last 1-d": lambda: lib.empty(2, memory_format=lib.channels_last),
        "empty preserve": lambda: lib.empty(2, 3, 4, 5, memory_format=lib.preserve_format),
        "zeros_like channels_last 1-d": lambda: lib.zeros_like(lib.ones(2), memory_format=lib.channels_last),
        "empty memory_format int": lambda: lib.empty(2, memory_format=3),
        "zeros out dtype clash": lambda: lib.zeros(2, dtype=lib.float32, out=lib.empty(2, dtype=lib.int64)),
        "zeros_like out": lambda: lib.zeros_like(x, out=lib.empty(2)),
    }


def _answer(lib: Any, fn: Any) -> Any:
    try:
        v = fn()
    except Exception as e:  # the exception type is what is compared
        return type(e).__name__
    if isinstance(v, lib.Tensor):
        return ("tensor", str(v.dtype).split(".")[1], tuple(v.shape), v.tolist() if v.dtype != lib.float32 or
                v.numel() < 10 else None)  # fmt: skip
    if isinstance(v, lib.dtype):
        return str(v).split(".")[1]
    return tuple(v) if isinstance(v, tuple) else v


@pytest.mark.parametrize("name", list(_calls(torch)))
def test_factory_keyword_as_pytorch(name: str) -> None:
    ours, theirs = _answer(ember, _calls(ember)[name]), _answer(torch, _calls(torch)[name])
    if isinstance(theirs, str) and theirs.endswith("Error"):  # refused: a type PyTorch code catches the same way
        assert ours == theirs or (theirs == "RuntimeError" and ours in ("RuntimeError", "DTypeError", "ShapeError"))
    else:
        assert ours == theirs


def test_a_sparse_layout_is_refused_with_the_way_to_build_one() -> None:
    with pytest.raises(RuntimeError, match="sparse_coo_tensor"):
        ember.zeros(2, 2, layout=ember.sparse_coo)
