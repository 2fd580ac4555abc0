"""The PNNX rule (``nn.X`` -> ``ember.nn.X``, ``F.x`` -> ``ember.nn.functional.x``, ``torch.x`` -> ``ember.x``,
``Tensor.x`` -> the method, ``aten::x`` -> the function) and its table of exceptions.

Two small torch modules that use many operator types are exported by the real pnnx converter once per
test session (in parallel) and must run in Ember equal to torch within 1e-4; every exception of the
table is run on a hand-written graph against torch.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
import ember.pnnx as ep
from ember.pnnx._expression import compile_expression, parse_expression
from ember.pnnx._functional import FUNCTION_EXCEPTIONS, FUNCTION_OPS
from ember.pnnx._nn import NN_EXCEPTIONS, NN_OPS
from ember.pnnx._reader import parse_value

from .test_converters import _graph

sys.path.insert(0, str(Path(__file__).parent))
import _rule_models


@pytest.fixture(scope="session")
def rule_exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, tuple[Any, ...], Path]]:
    """The rule models exported by pnnx: name -> (torch module, inputs, param path); one export per run."""
    pytest.importorskip("pnnx")
    torch = pytest.importorskip("torch")
    import pnnx

    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    d = root / "pnnx_rule_export"
    out: dict[str, tuple[Any, tuple[Any, ...], Path]] = {}
    models = _rule_models.models()
    with open(root / "pnnx_rule_export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = (d / "done").exists()
        d.mkdir(exist_ok=True)
        procs = []
        for name, (model, xs, shape) in models.items():
            out[name] = (model, xs, d / f"{name}.pnnx.param")
            if done:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # tracer notes about constants, deprecated upsample_* names
                torch.jit.trace(model, xs, check_trace=False).save(str(d / f"{name}.pt"))
            cmd = [pnnx.EXEC_PATH, f"{name}.pt", f"inputshape={shape}", "fp16=0"]
            procs.append((name, subprocess.Popen(cmd, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
        for name, proc in procs:
            text, _ = proc.communicate(timeout=600)
            if not out[name][2].exists():
                raise RuntimeError(f"pnnx failed on {name}: {text.decode(errors='replace')[-2000:]}")
        (d / "done").touch()
    return out


@pytest.mark.parametrize("name", ["layers", "functions", "scatters"])
def test_exported_operators_run_equal_to_torch(rule_exports, name):
    import torch

    model, xs, path = rule_exports[name]
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = model(*xs)
    got = ep.load(path)(*[ember.tensor(x.numpy()) for x in xs])
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g.detach().numpy(), w.numpy(), rtol=1e-4, atol=1e-4, err_msg=f"output {k}")


def test_exports_cover_every_kind_of_operator(rule_exports):
    types = {t for _, _, p in rule_exports.values() for t in ep.operator_counts(ep.read_param(p))}
    assert all(ep.is_supported(t) for t in types)
    kinds = {t.split(".")[0] if "." in t else t.split("::")[0] for t in types}
    assert {"nn", "F", "torch", "Tensor", "aten", "pnnx", "prim"} <= kinds
    assert {"nn.LSTM", "nn.GRU", "nn.RNN", "nn.MultiheadAttention", "nn.AdaptiveAvgPool2d", "nn.LPPool2d",
            "nn.RMSNorm", "nn.ChannelShuffle", "nn.LocalResponseNorm", "nn.Fold", "nn.Unfold", "nn.Softmax2d",
            "nn.RReLU", "nn.InstanceNorm1d", "nn.InstanceNorm3d", "nn.ReflectionPad1d", "nn.ReplicationPad3d",
            "F.grid_sample", "F.pairwise_distance", "F.rms_norm", "torch.baddbmm", "torch.masked_select",
            "F.adaptive_avg_pool2d", "F.upsample_nearest", "torch.slice_scatter", "Tensor.index_put",
            "aten::select_scatter", "aten::diagonal_scatter", "torch.clone"} <= types  # fmt: skip
    assert len(types) >= 120, len(types)


# -- the exceptions, each on a hand-written graph -------------------------------------------------


def _close(got, want):
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_lstm_with_initial_states_as_inputs_and_all_outputs(torch, tmp_path):
    tm = torch.nn.LSTM(3, 4).eval()
    attrs = {k: v.detach().numpy() for k, v in tm.state_dict().items()}
    x, h0, c0 = torch.randn(5, 2, 3), torch.randn(1, 2, 4), torch.randn(1, 2, 4)
    params = dict(input_size=3, hidden_size=4, num_layers=1, bias=True, batch_first=False, bidirectional=False,
                  proj_size=0)  # fmt: skip
    m = _graph(tmp_path, "nn.LSTM", params, [(5, 2, 3), (1, 2, 4), (1, 2, 4)], attrs, n_out=3)
    got = m(*[ember.tensor(t.numpy()) for t in (x, h0, c0)])
    with torch.no_grad():
        out, (h, c) = tm(x, (h0, c0))
    for g, w in zip(got, (out, h, c), strict=True):
        _close(g, w)


@pytest.mark.parametrize("n_in", [1, 2, 3])
def test_attention_with_one_two_or_three_inputs(torch, tmp_path, n_in):
    tm = torch.nn.MultiheadAttention(4, 2, batch_first=True).eval()
    attrs = {k: v.detach().numpy() for k, v in tm.state_dict().items()}
    q, kv = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    ins = [q, kv, kv][:n_in]
    params = dict(embed_dim=4, num_heads=2, batch_first=True, bias=True, add_bias_kv=False, add_zero_attn=False,
                  kdim=4, vdim=4)  # fmt: skip
    m = _graph(tmp_path, "nn.MultiheadAttention", params, [tuple(t.shape) for t in ins], attrs)
    with torch.no_grad():
        want = tm(*(ins * 3 if n_in == 1 else (ins + [kv] if n_in == 2 else ins)))[0]
    _close(m(*[ember.tensor(t.numpy()) for t in ins]), want)


@pytest.mark.parametrize(
    "typ",
    [
        "nn.AdaptiveAvgPool2d",
        "nn.AdaptiveMaxPool2d",
        "F.adaptive_avg_pool2d",
        "F.adaptive_max_pool2d",
        "nn.AdaptiveAvgPool3d",
        "F.adaptive_max_pool3d",
    ],
)
def test_adaptive_pool_output_size_zero_keeps_the_dim(torch, tmp_path, typ):
    d = 3 if typ.endswith("3d") else 2
    shape = (1, 2, 5, 6, 4)[: d + 2]
    size = (0, 3) if d == 2 else (0, 2, 0)
    x = torch.randn(*shape)
    keys = ["input"] if typ.startswith("F.") else None
    m = _graph(tmp_path, typ, {"output_size": size}, [shape], keys=keys)
    want_size = tuple(None if s == 0 else s for s in size)
    if typ.startswith("nn."):
        want = getattr(torch.nn, typ[3:])(want_size)(x)
    else:
        want = getattr(torch.nn.functional, typ[2:])(x, want_size)
    _close(m(ember.tensor(x.numpy())), want)


@pytest.mark.filterwarnings("ignore:`nn.functional.upsample")
@pytest.mark.parametrize("typ", ["F.upsample_nearest", "F.upsample_bilinear"])
def test_deprecated_upsample_names(torch, tmp_path, typ):
    x = torch.randn(1, 2, 3, 4)
    m = _graph(tmp_path, typ, {"scale_factor": 2.0}, [tuple(x.shape)], keys=["input"])
    _close(m(ember.tensor(x.numpy())), getattr(torch.nn.functional, typ[2:])(x, scale_factor=2.0))


@pytest.mark.parametrize("typ", [k for k in FUNCTION_EXCEPTIONS if "dropout" in k])
def test_dropout_family_is_the_identity_at_inference(tmp_path, typ):
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)
    m = _graph(tmp_path, typ, {"p": 0.5, "training": False}, [x.shape], keys=["input"])
    np.testing.assert_array_equal(m(ember.tensor(x)).numpy(), x)


def test_list_structure_and_aten_meshgrid(torch, tmp_path):
    from .conftest import write_pnnx

    lines = [
        "pnnx.Input in0 0 1 a",
        "pnnx.Input in1 0 1 b",
        "pnnx.Expression ix 0 1 idx expr=xy",
        "prim::ListConstruct lc 2 1 a b l",
        "aten::meshgrid mg 2 1 l idx g",
        "prim::ListUnpack lu 1 2 g gx gy",
        "prim::TupleConstruct tc 2 1 gx gy t",
        "prim::TupleUnpack tu 1 2 t ox oy",
        "pnnx.Output out 2 0 ox oy",
    ]
    m = ep.load(write_pnnx(tmp_path, "mg", lines))
    a, b = torch.arange(3.0), torch.arange(4.0)
    for g, w in zip(m(ember.tensor(a.numpy()), ember.tensor(b.numpy())), torch.meshgrid(a, b, indexing="xy")):
        _close(g, w)


def test_every_exception_is_tested_here_or_in_test_converters():
    tested_here = {"nn.LSTM", "nn.MultiheadAttention", "F.upsample_nearest", "F.upsample_bilinear"}
    tested_here |= {k for k in FUNCTION_EXCEPTIONS if "dropout" in k}
    tested_here |= {
        "aten::meshgrid",
        "prim::ListConstruct",
        "prim::ListUnpack",
        "prim::TupleConstruct",
        "prim::TupleUnpack",
    }
    tested_here |= {k for k in NN_EXCEPTIONS if k.startswith("nn.Adaptive")}
    tested_here |= {k for k in FUNCTION_EXCEPTIONS if k.startswith("F.adaptive")}
    text = (Path(__file__).parent / "test_converters.py").read_text() + (Path(__file__).parent / "test_export.py"
                                                                         ).read_text()  # fmt: skip
    elsewhere = {k for k in (*NN_EXCEPTIONS, *FUNCTION_EXCEPTIONS) if f'"{k}"' in text}
    untested = (set(NN_EXCEPTIONS) | set(FUNCTION_EXCEPTIONS)) - tested_here - elsewhere
    assert not untested, sorted(untested)


def test_rule_resolves_names_and_refuses_what_ember_lacks(tmp_path):
    assert "nn.LPPool3d" in NN_OPS and "nn.Module" not in NN_OPS and "nn._Loss" not in NN_OPS
    assert "F.grid_sample" in FUNCTION_OPS and "torch.logsumexp" in FUNCTION_OPS and "Tensor.narrow" in FUNCTION_OPS
    assert "aten::cummax" in FUNCTION_OPS and "torch.nn" not in FUNCTION_OPS and "Tensor._make" not in FUNCTION_OPS
    assert "torch.frobnicate" not in FUNCTION_OPS and not ep.is_supported("torch.frobnicate")
    assert len(ep.SUPPORTED_TYPES) > 800
    lines = ["pnnx.Input in 0 1 0", "torch.frobnicate f 1 1 0 1 $input=0", "pnnx.Output out 1 0 1"]
    from .conftest import write_pnnx

    with pytest.raises(ep.UnsupportedOperatorError, match=r"torch.frobnicate.*no ember.frobnicate"):
        ep.load(write_pnnx(tmp_path, "u", lines))


@pytest.mark.parametrize(("text", "want"), [
    ("expm1,sub(@0,0.5)", lambda x: np.expm1(x - 0.5)),
    ("log1p,@0", np.log1p),
    ("add(sub(expm1,@0),0.5),log1p,abs(@0)", lambda x: np.expm1(x) - 0.5 + np.log1p(np.abs(x))),
    ("mul(neg,@0,exp,@0)", lambda x: -x * np.exp(x)),
])  # fmt: skip
def test_expression_prefix_forms_as_pnnx_reads_them(text, want):
    x = np.random.default_rng(0).uniform(0.1, 1.0, 6)
    got = compile_expression(parse_expression(text), 1)([ember.tensor(x)])
    np.testing.assert_allclose(got.numpy(), want(x), rtol=1e-12)


def test_nested_list_parameters_and_expressions():
    assert parse_value("[[2,1],[0,1]]") == [[2, 1], [0, 1]]
    assert parse_value("((1,2),(3,4))") == [[1, 2], [3, 4]] and parse_value("[1,(2,3)]") == [1, [2, 3]]
    assert compile_expression(parse_expression("[[2,1],[0,1]]"), 0)([]) == [[2, 1], [0, 1]]
