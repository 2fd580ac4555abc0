"""ONNX's own backend node tests, run on Ember: loading the cases, running one, the report by operator.

``onnx.backend.test.case.node.collect_testcases`` builds ~1,900 single-operator models with inputs and
expected outputs in memory (about 15-20 s: its reference pooling is slow). They are cached once per onnx
version in the temp folder as ONNX protobufs (models, TensorProto/SequenceProto/OptionalProto values) in
one zip, so the NumPy and torch runs of ``make test`` pay it once. ``python tests/onnx/_node_cases.py``
prints the pass rate by operator.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import tempfile
import warnings
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass
class Case:
    name: str
    op: str
    model: bytes
    inputs: list[Any]
    outputs: list[Any]
    rtol: float
    atol: float


def _cache_path() -> Path:
    import onnx

    return Path(tempfile.gettempdir()) / f"ember-onnx-node-cases-{onnx.__version__}-{os.getuid()}.zip"


def _encode(value: Any) -> tuple[str, bytes]:
    from onnx import TensorProto, numpy_helper

    if value is None:
        return "none", b""
    if isinstance(value, TensorProto):  # some cases give their values as protos already
        return "tensor", value.SerializeToString()
    if isinstance(value, list):
        return "sequence", numpy_helper.from_list(value).SerializeToString()
    return "tensor", numpy_helper.from_array(np.asarray(value)).SerializeToString()


def _decode(kind: str, data: bytes) -> Any:
    from onnx import SequenceProto, TensorProto, numpy_helper

    if kind == "none":
        return None
    if kind == "sequence":
        p = SequenceProto()
        p.ParseFromString(data)
        return numpy_helper.to_list(p)
    t = TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def _op_of(name: str, model: Any, ops_by_name: dict[str, str]) -> str:
    for suffix in ("_expanded_ver18", "_expanded"):
        if name.endswith(suffix) and name[: -len(suffix)] in ops_by_name:
            return ops_by_name[name[: -len(suffix)]]
    nodes = model.graph.node
    return nodes[0].op_type if len(nodes) == 1 else nodes[-1].op_type


def _collect() -> list[Case]:
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = node.collect_testcases(None)
    by_name = {c.name: c for c in raw}
    single = {c.name: c.model.graph.node[0].op_type for c in raw if len(c.model.graph.node) == 1}
    cases = []
    for c in by_name.values():
        if not c.data_sets:
            continue
        ins, outs = c.data_sets[0]
        cases.append(Case(c.name, _op_of(c.name, c.model, single), c.model.SerializeToString(), list(ins),
                          list(outs), c.rtol, c.atol))  # fmt: skip
    return cases


def _write(path: Path, cases: list[Case]) -> None:
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    index = []
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
        for c in cases:
            entry = {"name": c.name, "op": c.op, "rtol": c.rtol, "atol": c.atol, "inputs": [], "outputs": []}
            zf.writestr(f"{c.name}/model.onnx", c.model)
            for side, values in (("inputs", c.inputs), ("outputs", c.outputs)):
                for i, v in enumerate(values):
                    kind, data = _encode(v)
                    entry[side].append(kind)  # type: ignore[attr-defined]
                    zf.writestr(f"{c.name}/{side}_{i}.pb", data)
            index.append(entry)
        zf.writestr("index.json", json.dumps(index))
    os.replace(tmp, path)


def _read(path: Path) -> list[Case]:
    cases = []
    with zipfile.ZipFile(path) as zf:
        for e in json.loads(zf.read("index.json")):
            n = e["name"]
            ins = [_decode(k, zf.read(f"{n}/inputs_{i}.pb")) for i, k in enumerate(e["inputs"])]
            outs = [_decode(k, zf.read(f"{n}/outputs_{i}.pb")) for i, k in enumerate(e["outputs"])]
            cases.append(Case(n, e["op"], zf.read(f"{n}/model.onnx"), ins, outs, e["rtol"], e["atol"]))
    return cases


def load_cases() -> list[Case]:
    """Every node test case (built by onnx on first use, then read from the cache).

    Always returned as read back from the cache: onnx gives some cases' values as ``TensorProto`` (upb's
    message raises a bare ``AttributeError: dtype``), which the cache's round trip makes NumPy arrays; the
    process that built the cache saw them raw, so its Cast/CastLike/QuantizeLinear cases failed.
    """
    path = _cache_path()
    with open(str(path) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            try:
                return _read(path)
            except (zipfile.BadZipFile, KeyError, ValueError, OSError):
                path.unlink()
        _write(path, _collect())
        return _read(path)


def _to_ember(v: Any) -> Any:
    import ember

    if v is None:
        return None
    if isinstance(v, list):
        return [_to_ember(x) for x in v]
    if v.dtype.name == "bfloat16":  # ml_dtypes' type: Ember makes it from float32
        return ember.tensor(v.astype(np.float32), dtype=ember.bfloat16)
    return ember.as_tensor(np.array(v, copy=True))  # (ascontiguousarray would make a 0-d array 1-d)


def _to_numpy(v: Any) -> Any:
    if v is None or isinstance(v, list):
        return None if v is None else [_to_numpy(x) for x in v]
    import ember

    if v.dtype == ember.bfloat16:
        import ml_dtypes

        return v.detach().float().numpy().astype(ml_dtypes.bfloat16)
    return v.detach().numpy()


def _compare(ref: Any, got: Any, rtol: float, atol: float) -> None:
    if isinstance(ref, list):
        assert isinstance(got, list) and len(got) == len(ref), f"expected a sequence of {len(ref)}, got {got!r}"
        for r, g in zip(ref, got):
            _compare(r, g, rtol, atol)
        return
    if ref is None:
        assert got is None, f"expected an empty optional, got {got!r}"
        return
    got = np.asarray(got)
    assert got.dtype == ref.dtype, f"dtype {got.dtype}, expected {ref.dtype}"
    assert got.shape == ref.shape, f"shape {got.shape}, expected {ref.shape}"
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


def run_case(case: Case) -> str | None:
    """None when Ember's outputs match the case's; otherwise the reason, in one line."""
    import ember.onnx

    try:
        # on the CPU whatever the default device: the cases test the converters' semantics (~1,900 small models;
        # on CUDA each new kernel would be compiled first); test_load/test_fuse/test_torch_models cover devices
        with ember.device("cpu"), ember.no_grad():
            model = ember.onnx.load(case.model)
            inputs = [_to_ember(v) for v in case.inputs]
            out = model(*inputs)
        outs = list(out) if isinstance(out, tuple) else [out]
        assert len(outs) == len(case.outputs), f"{len(outs)} outputs, expected {len(case.outputs)}"
        for r, g in zip(case.outputs, outs):
            _compare(r, _to_numpy(g), case.rtol, case.atol)
    except Exception as e:  # a failing case, whatever the reason, is reported as text (with where it was raised)
        import traceback

        text = str(e).replace("\n", " ")
        last = traceback.extract_tb(e.__traceback__)[-1]
        return f"{type(e).__name__}: {text[:300]} (raised at {Path(last.filename).name}:{last.lineno})"
    return None


def report(cases: list[Case], failures: dict[str, str]) -> str:
    """Pass rate by operator, worst first, and the total."""
    total: dict[str, int] = defaultdict(int)
    bad: dict[str, int] = defaultdict(int)
    for c in cases:
        total[c.op] += 1
        bad[c.op] += c.name in failures
    lines = [f"{'operator':<32} pass/total"]
    for op in sorted(total, key=lambda o: (-(bad[o] / total[o]), o)):
        lines.append(f"{op:<32} {total[op] - bad[op]:>4}/{total[op]:<4}")
    n, f = len(cases), len(failures)
    lines.append(f"{'all':<32} {n - f:>4}/{n:<4} ({100 * (n - f) / max(n, 1):.1f}%)")
    return "\n".join(lines)


_DTYPE_GAPS = [
    (("uint16", "uint32", "uint64", "UINT16", "UINT32", "UINT64"), "Ember has no uint16/uint32/uint64 dtype"),
    (
        ("float8", "FLOAT8", "int4", "INT4", "float4", "FLOAT4", "INT2", "UINT2", "int2", "uint2"),
        "Ember has no float8/float4/int4/int2 dtypes",
    ),
    (("bfloat16", "BFLOAT16"), "bfloat16 is not available on the CuPy backend (torch and NumPy have it)"),
    (("dtype object", "dtype <U", "string tensors", "STRING"), "Ember has no string dtype"),
    (("complex", "COMPLEX"), "Ember has no complex dtype"),
]


#: case-name prefix -> why it fails (checked by hand)
_CASE_GAPS = {
    "test_training_dropout": "Dropout in training mode: the expected mask comes from NumPy's random generator",
    "test_bernoulli": "random draws: ONNX's expected values come from NumPy's generator (RandomUniformLike unported)",
    "test_image_decoder": "ImageDecoder needs an image codec (JPEG/PNG/...): not implemented",
    "test_causal_conv_with_state": "CausalConvWithState: onnx builds an empty function body for it (no converter)",
    "test_dft_inverse": "the expected output has float32 rounding (1.9e-7 where the exact value is 0) over atol 1e-7",
}


def classify(name: str, reason: str) -> str:
    """The known-gap reason for a failure: a missing dtype, the operator not implemented, or a listed case."""
    reason = reason.split(" (raised at ")[0]
    for prefix, why in _CASE_GAPS.items():
        if name.startswith(prefix):
            return why
    for keys, why in _DTYPE_GAPS:
        if any(k in reason for k in keys):
            return why
    strings = ("StringNormalizer", "StringSplit", "StringConcat", "RegexFullMatch", "LabelEncoder")
    if any(f"'{op}'" in reason for op in strings):
        return "Ember has no string dtype"
    if "is not supported by Ember" in reason:
        op = reason.split("operator '")[1].split("'")[0] if "operator '" in reason else "?"
        return f"operator {op} is not implemented in ember.onnx"
    return "REVIEW: " + reason[:150]


if __name__ == "__main__":  # pragma: no cover - the report for the notes; --gaps prints node_gaps entries
    all_cases = load_cases()
    fails = {c.name: r for c in all_cases if (r := run_case(c)) is not None}
    print(report(all_cases, fails))
    if "-v" in sys.argv:
        for name, reason in sorted(fails.items()):
            print(f"{name}: {reason}")
    if "--gaps" in sys.argv:
        for name, reason in sorted(fails.items()):
            print(f"    {name!r}: {classify(name, reason)!r},")
