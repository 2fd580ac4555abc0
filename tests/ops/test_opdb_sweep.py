"""PyTorch's operator database, every OpInfo's first float64 and float32 samples, through ``tools/opdb_sweep.py``'s
checks (forward values/shapes/dtypes, gradients of the sum against PyTorch's, method and in-place variants,
refused samples and ``error_inputs``). The differences that remain are listed with their reasons; the test fails
on any other one and on a listed one that no longer happens (complex128: ``test_opdb_complex.py``)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # op_db imports it

_PATH = pathlib.Path(__file__).resolve().parents[2] / "tools" / "opdb_sweep.py"
_spec = importlib.util.spec_from_file_location("ember_opdb_sweep", _PATH)
assert _spec is not None and _spec.loader is not None
sweep = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = sweep
_spec.loader.exec_module(sweep)

CASES, ERRORS, META, KEYS = sweep.load()

_SCALARS = "Ember's binary operators take a Python number where PyTorch's function form wants a Tensor"
_SCALAR_OPS = (
    "__radd__", "__rand__", "__rdiv__", "__rmul__", "__ror__", "__rxor__", "atan2", "clamp_max", "clamp_min",
    "copysign", "eq", "fmax", "fmin", "fmod", "gcd", "ge", "gt", "hypot", "igamma", "isclose", "lcm", "ldexp", "le",
    "logaddexp", "logical_and", "logical_or", "logical_xor", "lt", "max.binary", "maximum", "min.binary", "minimum",
    "ne", "rsub",
)  # fmt: skip
#: OpInfo key -> (the flags it still earns, why)
EXPECTED: dict[str, tuple[set[str], str]] = {
    **{k: ({"no-raise"}, _SCALARS) for k in _SCALAR_OPS},
    **{k: ({"missing"}, why) for k, why in sweep.NOT_PROVIDED.items()},
    "nn.functional.batch_norm": ({"raises"}, "a 1-d input of size 0 is refused (PyTorch returns it)"),
    "nn.functional.batch_norm.without_cudnn": ({"raises"}, "as above"),
    "as_strided.partial_views": ({"forward", "raises"}, sweep.KNOWN["as_strided.partial_views"]),
    "as_strided_scatter": ({"gradient"}, sweep.KNOWN["as_strided_scatter"]),
    "nn.functional.ctc_loss": ({"gradient"}, sweep.KNOWN["nn.functional.ctc_loss"]),
}


#: OpInfos whose samples take seconds each on the torch backend (ctc_loss's time loop of small tensor operations)
SLOW = {"nn.functional.ctc_loss"}


def test_the_sweep_covers_op_db():
    assert len(KEYS) > 600 and sum(len(v) for v in CASES.values()) > 5000
    assert set(EXPECTED) <= set(KEYS)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.filterwarnings("ignore")  # (deprecations and beta notices of both libraries)
def test_opinfo_float(key):
    s = sweep.Sweep(5, 0)
    cases = CASES.get(key, [])
    if key in SLOW:  # the first sample of each dtype
        cases = [c for i, c in enumerate(cases) if i == 0 or c.dtype != cases[i - 1].dtype]
    s.run_key_safely(key, cases, META[key], ERRORS.get(key, []))
    got = {f for f, msgs in s.flags[key].items() if msgs}
    want, why = EXPECTED.get(key, (set(), ""))
    if got != want:
        msgs = "; ".join(f"{f}: {m}" for f in sorted(got) for m in s.flags[key][f][:3])
        raise AssertionError(f"{key}: flags {sorted(got)}, expected {sorted(want)} ({why or 'none'}): {msgs}")
