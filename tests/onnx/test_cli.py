"""``ember onnx info|run``."""

from __future__ import annotations

import numpy as np
import pytest

from ember.cli import main

from .conftest import ort_run


def test_info_lists_inputs_outputs_opset_and_operators(conv_model, tmp_path, capsys):
    path = tmp_path / "m.onnx"
    path.write_bytes(conv_model.SerializeToString())
    assert main(["onnx", "info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "opsets: ai.onnx 17" in out
    assert "input  x: (N,3,8,8) float" in out and "output y: (N,2) float" in out
    assert "5 nodes, 4 initializers (122 values)" in out
    for op in ("Conv", "Relu", "GlobalAveragePool", "Flatten", "Gemm"):
        assert any(line.split()[:2] == [op, "1"] and line.endswith("supported") for line in out.splitlines()), op
    assert "all operator types supported" in out


def test_info_names_unsupported_operators(tmp_path, capsys):
    from onnx import TensorProto, helper

    node = helper.make_node("Frobnicate", ["x"], ["y"], domain="my.ops")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.ops", 1)])
    (tmp_path / "u.onnx").write_bytes(model.SerializeToString())
    assert main(["onnx", "info", str(tmp_path / "u.onnx")]) == 0
    out = capsys.readouterr().out
    assert "my.ops:Frobnicate     1  NOT SUPPORTED" in out
    assert "1 operator type(s) not supported: my.ops:Frobnicate" in out


@pytest.mark.process_default  # the CLI program makes its inputs and its model on the process default
def test_run_saves_outputs_as_npy(conv_model, tmp_path, capsys):
    path = tmp_path / "m.onnx"
    path.write_bytes(conv_model.SerializeToString())
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main(["onnx", "run", str(path), "--input", f"x={tmp_path / 'x.npy'}", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "y: (2, 2) float32" in out
    np.testing.assert_allclose(np.load(tmp_path / "o" / "y.npy"), ort_run(conv_model, {"x": x})[0], rtol=1e-5,
                               atol=1e-6)  # fmt: skip


def test_run_reports_bad_inputs_in_one_line(conv_model, tmp_path, capsys):
    path = tmp_path / "m.onnx"
    path.write_bytes(conv_model.SerializeToString())
    assert main(["onnx", "run", str(path)]) == 1
    assert "missing ['x']" in capsys.readouterr().err
    (tmp_path / "bad.npy").write_bytes(b"not numpy")
    assert main(["onnx", "run", str(path), "--input", f"x={tmp_path / 'bad.npy'}"]) == 1
    assert "cannot read" in capsys.readouterr().err
    assert main(["onnx", "run", str(path), "--input", "x"]) == 1
    assert "expected NAME=FILE.npy" in capsys.readouterr().err
    (tmp_path / "junk.onnx").write_bytes(b"junk")
    assert main(["onnx", "info", str(tmp_path / "junk.onnx")]) == 1
    assert "not an ONNX model" in capsys.readouterr().err
