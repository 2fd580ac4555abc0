"""In-place logical and bitwise methods (``logical_not_``, ``bitwise_xor_``, ...) under Ember and PyTorch:
same values, the tensor's own dtype kept, the tensor itself returned, and an error PyTorch code can catch
where PyTorch refuses (bitwise ops of a float tensor)."""

from __future__ import annotations

import pytest

import ember

UNARY = ("logical_not_", "bitwise_not_")
BINARY = ("logical_and_", "logical_or_", "logical_xor_", "bitwise_and_", "bitwise_or_", "bitwise_xor_")


def _run(lib, dtype: str, name: str):
    t = lib.tensor([0, 1, 2, 0]).to(getattr(lib, dtype))
    u = lib.tensor([1, 1, 0, 0]).to(getattr(lib, dtype))
    x = t.clone()
    try:
        r = getattr(x, name)(*(() if name in UNARY else (u,)))
    except RuntimeError:
        return "error"
    return str(x.dtype).rsplit(".", 1)[-1], x.tolist(), r is x


@pytest.mark.parametrize("dtype", ["bool", "float32", "int64"])
@pytest.mark.parametrize("name", UNARY + BINARY)
def test_inplace_logical_and_bitwise_methods_match_torch(torch, dtype: str, name: str) -> None:
    assert _run(ember, dtype, name) == _run(torch, dtype, name)
