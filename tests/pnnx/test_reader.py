"""Reading .pnnx.param/.pnnx.bin files, and the errors for bad ones (hand-written files, no torch needed)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.pnnx as ep
from ember._errors import ShapeError
from ember.pnnx._reader import parse_value

from .conftest import write_pnnx

EXAMPLES = Path("/work/shared/pnnx/examples")

W = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
B = np.array([0.5, -1.0], dtype=np.float32)
FC = [
    "pnnx.Input    in0  0 1 0 #0=(1,3)f32",
    "nn.Linear     fc   1 1 0 1 bias=True in_features=3 out_features=2 @bias=(2)f32 @weight=(2,3)f32 #0=(1,3)f32",
    "pnnx.Output   out  1 0 1",
]


def _fc(tmp_path: Path, lines=FC, weights=None) -> Path:
    return write_pnnx(tmp_path, "fc", lines, {"fc.weight": W, "fc.bias": B} if weights is None else weights)


def test_parse_value_types_like_pnnx():
    assert parse_value("None") is None and parse_value("()") is None
    assert parse_value("True") is True and parse_value("False") is False
    assert parse_value("(3,3)") == [3, 3] and parse_value("(2.0,2.0)") == [2.0, 2.0]
    assert parse_value("1.000000e-5") == 1e-5 and parse_value("-1") == -1 and parse_value("2147483647") == 2**31 - 1
    assert parse_value("zeros") == "zeros" and parse_value("add(@0,@1)") == "add(@0,@1)"
    assert parse_value("%batch") == "%batch"
    assert parse_value("(a,1)") == ["a", 1]


def test_reads_the_format_example_and_runs_it(tmp_path):
    lines = (EXAMPLES / "ex.pnnx.param").read_text().splitlines()[2:] if EXAMPLES.exists() else None
    if lines is None:
        pytest.skip("shared PNNX examples not present")
    w = {
        "scale.data": np.array([0.5, 2.0], np.float32),
        "fc.bias": np.array([0.0, 1.0], np.float32),
        "fc.weight": np.array([[1, 0, -1], [0.5, 0.25, 0]], np.float32),
    }
    m = ep.load(write_pnnx(tmp_path, "ex", lines, w))
    x, y = np.array([[1.0, 2.0, -3.0]], np.float32), np.array([[0.5, -1.0]], np.float32)
    a, b = m(ember.tensor(x), ember.tensor(y))
    h = np.maximum(x @ w["fc.weight"].T + w["fc.bias"], 0)
    np.testing.assert_allclose(a.detach().numpy(), h * w["scale.data"] + 2 * y, rtol=1e-6)
    np.testing.assert_allclose(b.detach().numpy(), 1 / (1 + np.exp(-h)), rtol=1e-6)
    assert [p for p, _ in m.named_buffers()] == ["scale.data"]


@pytest.mark.parametrize("name", ["resnet18", "yolov5s", "yolov5s_decode", "tiny", "ex"])
def test_real_graphs_parse_in_topological_order(name):
    path = EXAMPLES / f"{name}.pnnx.param"
    if not path.exists():
        pytest.skip("shared PNNX examples not present")
    g = ep.read_param(path)
    order = ep.topological_order(g)
    assert sorted(order) == list(range(len(g.operators)))
    assert len({o for op in g.operators for o in op.outputs}) == g.operand_count
    assert set(ep.operator_counts(g)) <= set(ep.SUPPORTED_TYPES)


def test_topological_order_fixes_a_shuffled_file(tmp_path):
    lines = [FC[0], "nn.ReLU r 1 1 1 2", FC[1], "pnnx.Output out 1 0 2"]
    m = ep.load(_fc(tmp_path, lines))
    x = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(m(ember.tensor(x)).detach().numpy(), np.maximum(x @ W.T + B, 0))


def test_zip64_entries_read(tmp_path):
    p = _fc(tmp_path)
    with zipfile.ZipFile(tmp_path / "fc.pnnx.bin", "w") as zf:
        for key, arr in {"fc.weight": W, "fc.bias": B}.items():
            with zf.open(key, "w", force_zip64=True) as f:
                f.write(arr.tobytes())
    np.testing.assert_array_equal(ep.load(p).fc.weight.detach().numpy(), W)


def test_bin_path_default_and_explicit(tmp_path):
    p = _fc(tmp_path)
    assert ep.default_bin_path(p) == tmp_path / "fc.pnnx.bin"
    (tmp_path / "fc.pnnx.bin").rename(tmp_path / "w.bin")
    with pytest.raises(FileNotFoundError, match=r"fc\.pnnx\.bin"):
        ep.load(p)
    assert ep.load(p, tmp_path / "w.bin").fc.bias.shape == (2,)


# -- bad input ------------------------------------------------------------------------------------


def test_unknown_operator_names_it_its_line_and_what_ember_lacks(tmp_path):
    lines = [FC[0], "nn.Frobnicate f 1 1 0 1 k=3", "pnnx.Output out 1 0 1"]
    p = write_pnnx(tmp_path, "u", lines)
    want = r"u.pnnx.param:4: .*'nn.Frobnicate'.*no ember.nn.Frobnicate.*SUPPORTED_TYPES"
    with pytest.raises(ep.UnsupportedOperatorError, match=want) as e:
        ep.load(p)
    assert isinstance(e.value, NotImplementedError)
    assert ep.operator_counts(ep.read_param(p)) == {"pnnx.Input": 1, "nn.Frobnicate": 1, "pnnx.Output": 1}


def test_missing_weight_entry_names_entry_and_file(tmp_path):
    p = _fc(tmp_path, weights={"fc.weight": W})
    with pytest.raises(ep.PnnxFormatError, match=r"fc.pnnx.bin.*'fc.bias'.*missing"):
        ep.load(p)


def test_truncated_bin_names_the_entry(tmp_path):
    p = _fc(tmp_path)
    b = tmp_path / "fc.pnnx.bin"
    data = b.read_bytes()
    b.write_bytes(data[: data.index(b"fc.bias") + 10])
    with pytest.raises(ep.PnnxFormatError, match=r"fc.pnnx.bin.*truncated.*'fc.bias'"):
        ep.load(p)


def test_entry_size_disagreeing_with_shape_is_refused(tmp_path):
    p = _fc(tmp_path, weights={"fc.weight": W, "fc.bias": np.zeros(3, np.float32)})
    with pytest.raises(ep.PnnxFormatError, match=r"'fc.bias'.*12 bytes.*needs 8"):
        ep.load(p)


def test_attribute_shape_disagreeing_with_the_layer_is_refused(tmp_path):
    lines = [FC[0], FC[1].replace("@weight=(2,3)", "@weight=(3,2)"), FC[2]]
    p = _fc(tmp_path, lines, {"fc.weight": W.reshape(3, 2), "fc.bias": B})
    with pytest.raises(ep.PnnxFormatError, match=r"line 4|:4:.*'fc.weight'.*\(3, 2\).*\(2, 3\)"):
        ep.load(p)


def test_compressed_entry_is_refused(tmp_path):
    p = _fc(tmp_path)
    with zipfile.ZipFile(tmp_path / "fc.pnnx.bin", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("fc.weight", W.tobytes())
        zf.writestr("fc.bias", B.tobytes())
    with pytest.raises(ep.PnnxFormatError, match=r"'fc.bias'.*compressed \(method 8\)"):
        ep.load(p)


def test_bin_that_is_not_a_zip_is_refused(tmp_path):
    p = _fc(tmp_path)
    (tmp_path / "fc.pnnx.bin").write_bytes(b"\x80\x04K\x01." * 10)  # a pickle, never loaded
    with pytest.raises(ep.PnnxFormatError, match=r"fc.pnnx.bin: not a PNNX weight file"):
        ep.load(p)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("1234\n1 1\n", r":1: expected the PNNX magic number 7767517"),
        ("7767517\nfoo\n", r":2: expected '<operator count> <operand count>'"),
        ("7767517\n2 1\npnnx.Input in0 0 1 0\n", r"announces 2 operators, the file has 1 \(truncated\?\)"),
        ("7767517\n1 1\npnnx.Input in0\n", r":3: expected 'TYPE NAME N_IN N_OUT"),
        ("7767517\n1 1\npnnx.Input in0 x 1 0\n", r":3: .*counts as integers"),
        ("7767517\n1 1\nnn.ReLU r 2 1 0\n", r":3: .*declares 2 inputs and 1 outputs"),
        ("7767517\n1 1\npnnx.Input in0 0 1 0 oops\n", r":3: .*expected key=value, got 'oops'"),
        ("7767517\n1 1\npnnx.Input in0 0 1 0 #0=[1,2]f32\n", r":3: shape of operand 0: expected a shape"),
        ("7767517\n1 1\nnn.ReLU r 1 1 0 1 $input=7\n", r":3: .*\$input names operand '7'"),
    ],
)
def test_malformed_param_names_the_line_and_what_was_expected(tmp_path, text, match):
    p = tmp_path / "bad.pnnx.param"
    p.write_text(text)
    with pytest.raises(ep.PnnxFormatError, match=match):
        ep.read_param(p)


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        (["nn.ReLU r 1 1 9 1", "pnnx.Output out 1 0 1"], r":3: .*reads operand '9', which no operator produces"),
        (["pnnx.Input a 0 1 0", "pnnx.Input b 0 1 0"], r":4: operand '0' is produced twice"),
        (["nn.ReLU r 1 1 1 0", "nn.ReLU s 1 1 0 1"], r"cycle"),
        (["pnnx.Input a 0 1 0", "nn.ReLU r 1 1 0 1 inplace=1 bogus=2"], r":4: nn.ReLU 'r': cannot build.*bogus"),
        (["pnnx.Input a 0 1 0", "nn.Linear l 1 1 0 1 in_features=3 out_features=2 bias=False"], r"no @weight"),
        (["pnnx.Input a 0 1 0", "pnnx.Expression e 1 1 0 1 expr=add(@0,@1)"], r":4: .*@1 refers past"),
        (["pnnx.Input a 0 1 0", "pnnx.Expression e 1 1 0 1 expr=frob(@0)"], r"unknown function 'frob'"),
    ],
)
def test_inconsistent_graphs_are_refused(tmp_path, lines, match):
    with pytest.raises(ep.PnnxFormatError, match=match):
        ep.load(write_pnnx(tmp_path, "g", lines))


def test_runtime_shape_mismatch_names_the_operator_and_shapes(tmp_path):
    m = ep.load(_fc(tmp_path))
    with pytest.raises(
        ShapeError, match=r":4: operator 'fc' \(nn.Linear\) .*\[\(2, 4\)\] \(exported with \[\(1, 3\)\]\)"
    ):
        m(ember.ones(2, 4))
    with pytest.raises(TypeError, match="takes 1 input"):
        m(ember.ones(1, 3), ember.ones(1, 3))


def test_runtime_error_names_keyed_inputs_too(tmp_path):
    lines = ["pnnx.Input a 0 1 0", "pnnx.Input b 0 1 1", "torch.matmul mm 2 1 0 1 2 $input=0 $other=1",
             "pnnx.Output out 1 0 2"]  # fmt: skip
    m = ep.load(write_pnnx(tmp_path, "mm", lines))
    want = r"operator 'mm' \(torch.matmul\) failed on input shapes \[\(2, 3\), \(4, 5\)\]"
    with pytest.raises(ShapeError, match=want):
        m(ember.ones(2, 3), ember.ones(4, 5))
