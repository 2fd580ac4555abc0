"""``tools/opdb_sweep_wide.py``'s checks in the suite, on op_db's first 4 samples per dtype of every OpInfo: strided
and transposed view inputs, second-order gradients (float64), in-place variants on views of a clone, ``out=``, and
int64/int32/uint8/bool/float16/bfloat16 inputs (result dtypes and values). The differences that remain are listed
with their reasons; the test fails on any other one and on a listed one that no longer happens. (The tool runs
every sample: ``PYTHONPATH=src python tools/opdb_sweep_wide.py --mode all,noncontig,gradgrad,inplace-view,out,dtypes``.)
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

import ember

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # op_db imports it

_TOOLS = pathlib.Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(_TOOLS))
_spec = importlib.util.spec_from_file_location("ember_opdb_sweep_wide", _TOOLS / "opdb_sweep_wide.py")
assert _spec is not None and _spec.loader is not None
wide = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = wide
_spec.loader.exec_module(wide)

SAMPLES = 4
MODES = {"noncontig", "gradgrad", "inplace-view", "out", "dtypes"}
_, _, META, KEYS = wide.base.load(5)
FLOATS = wide.ow.cases(("float64", "float32"), "f", wide.base.EXCLUDE, max_samples=SAMPLES)
OTHERS = wide.ow.cases(wide.OTHER_DTYPES, "d", wide.base.EXCLUDE, max_samples=SAMPLES)

#: OpInfo key -> (the flags it still earns, why)
EXPECTED: dict[str, tuple[set[str], str]] = {
    **{k: ({"missing"}, why) for k, why in wide.base.NOT_PROVIDED.items()},
    # PyTorch's faults (tools/opdb_sweep.py's KNOWN)
    "as_strided.partial_views": ({"forward", "raises"}, wide.base.KNOWN["as_strided.partial_views"]),
    "nn.functional.ctc_loss": ({"gradient"}, wide.base.KNOWN["nn.functional.ctc_loss"]),
    "masked.argmax": ({"forward"}, wide.base.KNOWN["masked.argmax"]),
    "masked.argmin": ({"forward"}, wide.base.KNOWN["masked.argmin"]),
    "linalg.norm.subgradients_at_zero": ({"gradient"}, wide.base.KNOWN["linalg.norm.subgradients_at_zero"]),
    "nn.functional.softmin.with_dtype": (
        {"forward"},
        "PyTorch negates a uint8 input in uint8 (wrapping: softmin of "
        "[1, 2, 0] is [0.73, 0.27, 0]); Ember negates the values",
    ),
    "nn.functional.soft_margin_loss": ({"forward"}, "PyTorch's float16 loss overflows to inf; Ember's is finite"),
    # integer arithmetic where Ember computes in float or refuses
    **{
        k: (
            {"forward"},
            "PyTorch truncates a float alpha/beta to the integer dtype (beta=0.2 counts as 0) and "
            "keeps integers; Ember promotes to float (exact values)",
        )
        for k in ("addmv", "baddbmm")
    },
    "addbmm": ({"forward", "raises"}, "as addmv; also refuses int32 operands with an int64 input"),
    "sum_to_size": ({"forward"}, "PyTorch returns int64 for a 0-d int32/uint8 summed to () (no dim summed)"),
    **{
        f"nn.functional.{k}": (
            {"forward"},
            "uint8 resampling rounds differently from PyTorch's uint8 kernels (not investigated)",
        )
        for k in ("interpolate.bilinear", "interpolate.bicubic", "upsample_bilinear")
    },
    "trapz": (
        {"forward"},
        "uint8 x: Ember wraps the differences of x (-6 as 250), PyTorch the whole result mod 256; "
        "both differ from the true value (not fixed)",
    ),
    "trapezoid": ({"forward"}, "as trapz"),
    "masked.median": ({"forward"}, "bfloat16: a different median of values that round together (not investigated)"),
    "matrix_exp": ({"forward", "raises"}, "float16 refused (no half LAPACK on NumPy); bfloat16 computed in float32"),
    # not implemented / known elsewhere
    "nn.functional.batch_norm": ({"raises"}, "a 1-d input of size 0 is refused (PyTorch returns it)"),
    **{
        k: ({"gradient"}, wide.base.KNOWN[k])
        for k in ("nn.functional.linear_cross_entropy.chunked", "nn.functional.linear_cross_entropy.chunked_none")
    },
}


#: differences of one backend only (key -> (flags, why)): they replace EXPECTED's entry there
_TORCH_BACKEND: dict[str, tuple[set[str], str]] = {
    "masked.median": (set(), ""),
    "matrix_exp": (set(), ""),
    "nn.functional.adaptive_avg_pool3d": ({"raises"}, "float16/bfloat16: torch's avg_pool3d CPU kernel has no half"),
}
if ember.backends.current() == "torch":
    EXPECTED.update(_TORCH_BACKEND)
    EXPECTED = {k: v for k, v in EXPECTED.items() if v[0]}


def test_the_wide_sweep_covers_op_db():
    assert len(KEYS) > 600 and sum(len(v) for v in FLOATS.values()) > 3000
    assert sum(len(v) for v in OTHERS.values()) > 5000
    assert set(EXPECTED) <= set(KEYS)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.filterwarnings("ignore")  # (deprecations and beta notices of both libraries)
def test_opinfo_wide(key):
    s = wide.Wide(SAMPLES, 0)
    s.run_wide_safely(key, META[key], MODES, {"f": FLOATS.get(key, []), "d": OTHERS.get(key, [])})
    got = {f for f, msgs in s.flags[key].items() if msgs}
    want, why = EXPECTED.get(key, (set(), ""))
    if got != want:
        msgs = "; ".join(f"{f}: {m}" for f in sorted(got) for m in s.flags[key][f][:3])
        raise AssertionError(f"{key}: flags {sorted(got)}, expected {sorted(want)} ({why or 'none'}): {msgs}")
