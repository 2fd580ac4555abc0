"""ONNX's backend node tests on Ember, one test per operator: every case passes unless it is a known gap.

A known gap (``node_gaps.py``) that starts passing fails the test too, so the list stays exact. The pass
rate by operator: ``python tests/onnx/_node_cases.py``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

pytest.importorskip("onnx", reason="ember.onnx needs the onnx package: pip install 'ember[onnx]'")

from . import _node_cases, node_gaps

pytestmark = pytest.mark.onnx_node


def _operators() -> list[str]:
    import onnx.defs

    return sorted({s.name for s in onnx.defs.get_all_schemas()})


@pytest.fixture(scope="module")
def cases_by_op() -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = defaultdict(list)
    for c in _node_cases.load_cases():
        out[c.op].append(c)
    return out


@pytest.mark.parametrize("op", _operators())
def test_node_cases(op: str, cases_by_op: dict[str, list[Any]]) -> None:
    import ember

    cases = cases_by_op.get(op)
    if not cases:
        pytest.skip(f"onnx has no node test for {op}")
    with ember.device("cpu"):  # the cases run on the CPU (_node_cases.run_case); torch's in the mixed run
        gaps = node_gaps.gaps(ember.zeros(1)._backend.name)
    failed = {c.name: reason for c in cases if (reason := _node_cases.run_case(c)) is not None}
    unexpected = {k: v for k, v in failed.items() if k not in gaps}
    fixed = sorted(c.name for c in cases if c.name in gaps and c.name not in failed)
    assert not unexpected, "cases that fail and are not known gaps:\n" + "\n".join(
        f"  {k}: {v}" for k, v in unexpected.items()
    )
    assert not fixed, f"known gaps that now pass (remove them from node_gaps.py): {fixed}"


def test_a_fresh_cache_gives_the_values_a_cached_one_does(tmp_path, monkeypatch):
    """The process that builds the case cache gets NumPy values too, not onnx's ``TensorProto`` (the GPU run's
    'AttributeError: dtype' in Cast/CastLike/QuantizeLinear came from the xdist worker that built it)."""
    import numpy as np

    from onnx import numpy_helper

    raw = [_node_cases.Case("c", "Cast", b"", [numpy_helper.from_array(np.arange(3, dtype=np.float32))],
                            [np.arange(3, dtype=np.float16)], 0.0, 0.0)]  # fmt: skip
    monkeypatch.setattr(_node_cases, "_cache_path", lambda: tmp_path / "cases.zip")
    monkeypatch.setattr(_node_cases, "_collect", lambda: raw)
    built, cached = _node_cases.load_cases(), _node_cases.load_cases()
    for case in (built[0], cached[0]):
        (x,), (y,) = case.inputs, case.outputs
        assert isinstance(x, np.ndarray) and x.dtype == np.float32 and x.tolist() == [0, 1, 2]
        assert isinstance(y, np.ndarray) and y.dtype == np.float16 and y.tolist() == [0, 1, 2]
