"""NumPy scalars as operands count as Python numbers, as in PyTorch: ``float32 tensor * np.float64(2)`` is float32
(``x / np.sqrt(d)`` is everywhere in user code). Ember kept NumPy's float64 (a float subclass NumPy treats as
strongly typed) and upcast the result. The same code under both libraries: dtypes and values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _cases(lib: Any) -> dict[str, Any]:
    x = lib.tensor([1.5, -2.0, 3.0])
    i = lib.tensor([1, 2, 3])
    h = lib.tensor([1.0, 2.0], dtype=lib.float16)
    return {
        "x*f64": lambda: x * np.float64(2), "f64*x": lambda: np.float64(2) * x, "x/sqrt": lambda: x / np.sqrt(4.0),
        "x+f64": lambda: x + np.float64(1), "f64-x": lambda: np.float64(1) - x, "i*f64": lambda: i * np.float64(1.5),
        "x**f64": lambda: x ** np.float64(2), "f64**x": lambda: np.float64(2) ** x, "h*f64": lambda: h * np.float64(3),
        "x*c128": lambda: x * np.complex128(1j), "i+i64": lambda: i + np.int64(2), "x*f32": lambda: x * np.float32(2),
        "where": lambda: lib.where(x > 0, x, np.float64(0.0)), "clamp": lambda: lib.clamp(x, min=np.float64(0.0)),
        "clamp int": lambda: lib.clamp(i, max=np.float64(1.5)), "x==f64": lambda: x == np.float64(1.5),
        "fill_": lambda: x.clone().fill_(np.float64(2)), "mul_": lambda: x.clone().mul_(np.float64(2)),
        "full": lambda: lib.full((2,), np.float64(1.5)), "full f32": lambda: lib.full((2,), np.float32(1.5)),
        "div": lambda: x.div(np.float64(2)), "lerp": lambda: lib.lerp(x, x * 2, np.float64(0.5)),
        "pow": lambda: lib.pow(x, np.float64(2)), "add alpha": lambda: lib.add(x, x, alpha=np.float64(2)),
    }  # fmt: skip


@pytest.mark.parametrize("name", list(_cases(ember)))
def test_numpy_scalar_operand_as_pytorch(name: str) -> None:
    answers = []
    for lib in (ember, torch):
        r = _cases(lib)[name]()
        answers.append((str(r.dtype).split(".")[1], np.asarray(r.tolist())))
    assert answers[0][0] == answers[1][0]
    np.testing.assert_allclose(answers[0][1], answers[1][1], rtol=1e-6)
