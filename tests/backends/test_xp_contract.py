"""The backend contract: code above ``backends/`` calls only the ``xp`` names listed in ``backends/_base.py``
(``XP_NAMES``, ``XP_LINALG_NAMES``) and no NumPy function directly; every backend's namespace has them all."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from ember.backends._base import XP_LINALG_NAMES, XP_NAMES

SRC = Path(__file__).resolve().parents[2] / "src" / "ember"
#: operator code: computes on backend arrays only, so it imports no NumPy at all
OPERATOR_DIRS = ("ops", "nn/functional")


def _is_xp(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "xp") or (isinstance(node, ast.Attribute) and node.attr == "xp")


def xp_names_outside_contract(source: str) -> set[str]:
    """``xp.<name>`` (and ``xp.linalg.<name>``) uses in ``source`` that the contract does not list."""
    bad = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _is_xp(node.value) and node.attr not in XP_NAMES:
            bad.add(node.attr)
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "linalg"
            and _is_xp(node.value.value)
            and node.attr not in XP_LINALG_NAMES
        ):
            bad.add(f"linalg.{node.attr}")
    return bad


def numpy_imports(source: str) -> list[str]:
    """The NumPy imports in ``source`` (operator code must have none)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.split(".")[0] == "numpy"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "numpy" and not node.level:
            out.append(node.module or "")
    return out


def _above_backends() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if "backends" not in p.relative_to(SRC).parts]


def test_code_above_backends_calls_only_contract_names() -> None:
    found = {str(p.relative_to(SRC)): xp_names_outside_contract(p.read_text()) for p in _above_backends()}
    assert {k: v for k, v in found.items() if v} == {}


def test_operator_code_imports_no_numpy() -> None:
    files = [p for d in OPERATOR_DIRS for p in sorted((SRC / d).rglob("*.py"))]
    assert len(files) > 20
    found = {str(p.relative_to(SRC)): numpy_imports(p.read_text()) for p in files}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_checks_catch_a_planted_violation() -> None:
    planted = "import numpy as np\n\ndef f(x):\n    return x._backend.xp.fft(np.exp(x._backend.xp.linalg.lstsq(x)))\n"
    assert xp_names_outside_contract(planted) == {"fft", "linalg.lstsq"}
    assert numpy_imports(planted) == ["numpy"]
    assert xp_names_outside_contract("def f(be, x):\n    return be.xp.sum(x, axis=0)\n") == set()


def test_every_backend_namespace_has_the_contract() -> None:
    from ember.backends import _meta_xp

    namespaces = {"numpy": np, "meta": _meta_xp}
    if (torch_xp := _torch_xp()) is not None:
        namespaces["torch"] = torch_xp
    for name, xp in namespaces.items():
        assert sorted(n for n in XP_NAMES if not hasattr(xp, n)) == [], name
        assert sorted(n for n in XP_LINALG_NAMES if not hasattr(xp.linalg, n)) == [], name


def _torch_xp() -> object | None:
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    from ember.backends.torch import xp

    return xp


@pytest.mark.parametrize("fn", ["heaviside"])
def test_torch_namespace_serves_what_numpy_serves(fn: str) -> None:
    """heaviside was missing from the torch namespace (found by the contract): it runs on both backends."""
    import ember

    x = ember.tensor([-1.5, 0.0, 2.0])
    assert getattr(ember, fn)(x, ember.tensor([0.5])).tolist() == [0.0, 0.5, 1.0]
