"""Every registered operator with 0-d inputs, with empty inputs and with broadcasting inputs, against PyTorch
(issue 29's sweep). The cases come from the check_op registries (``tests/ops``, ``tests/nn``); each case's array
arguments are rewritten into:

- ``0d``: every array argument 0-d;
- ``emptyN`` / ``empty-1``: the first array argument with an empty first / last dim (an empty batch, an empty
  feature dim); ``emptyall``: every argument empty in its first dim (when they all have one shape);
- ``drop<i>`` / ``one<i>`` / ``last1_<i>``: argument ``i`` without its first dim, with a first dim of 1, with a
  last dim of 1 (so that it broadcasts against the others).

PyTorch runs first. Where it raises, Ember must raise too, with an error PyTorch code catches (RuntimeError,
IndexError). Where it does not, Ember must give the same values, shapes and dtypes, and the same gradients for
a random upstream gradient. ``KNOWN`` lists the deliberate deviations, each with its reason; an entry that no
longer differs fails the test, so the list stays true.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
HERE = Path(__file__).parent
REGISTRIES = [
    ("ops/test_core_ops.py", ["CASES"]),
    ("ops/test_math_stats_layout.py", ["CASES"]),
    ("ops/test_index_linalg.py", ["CASES"]),
    ("ops/test_registry_new.py", ["CASES", "NONFINITE"]),
    ("ops/test_registry_utility.py", ["CASES"]),
    ("nn/test_functional.py", ["ACTIVATIONS", "CONV", "NORMS", "MISC", "LOSSES"]),
    ("nn/test_conv_pool.py", ["CASES"]),
]

_LENIENT = "Ember broadcasts where PyTorch demands equal shapes or ranks; the result is the broadcast one"
_TORCH_BUG = "PyTorch's own failure (a ZeroTensor it cannot convert, or an invalid gradient in its backward)"
_EMPTY_BN = ("batch norm over nothing to average (empty batch or feature dim): Ember refuses with a ShapeError "
             "where PyTorch returns NaN statistics")  # fmt: skip
_NONE_GRAD = "an empty gradient where PyTorch gives none (the same values: nothing flows)"
_EMPTY_SPATIAL = "an empty spatial dim: Ember returns the empty result, PyTorch refuses"
_ENTRIES = [  # (case, variants, reason)
    ("index_linalg:take_along_dim", "last1_0", "PyTorch broadcasts the input along the gathered dim; Ember refuses"),
    ("registry_new:sgn", "0d emptyN empty-1", _TORCH_BUG),
    ("registry_utility:vander", "emptyN empty-1", _NONE_GRAD),
    ("registry_utility:trapezoid", "empty-1", _NONE_GRAD),
    ("registry_utility:trapezoid_x", "emptyN", _NONE_GRAD),
    ("registry_utility:trapezoid_x", "one0", _LENIENT),
    ("functional:group_norm", "empty-1", "weight gradient over empty groups: Ember 0 (an empty sum), PyTorch NaN"),
    ("functional:batch_norm_train_bias_only", "empty-1", _EMPTY_BN),
    ("functional:bilinear", "drop0 one0 drop1 one1 drop3 one3", _LENIENT),
    *[(f"functional:{n}", "empty-1", _EMPTY_SPATIAL)
      for n in ("interp_nearest", "interp_bilinear_down", "interp_linear")],
    ("functional:pixel_shuffle", "emptyN empty-1", _TORCH_BUG),
    ("functional:pixel_unshuffle", "emptyN empty-1", "PyTorch checks an empty input's channels with the wrong factor"),
    ("functional:cosine_embedding", "0d", _LENIENT),
    ("functional:margin_ranking", "drop0 drop1", _LENIENT),
    ("functional:triplet", "drop0 drop1 drop2", _LENIENT),
]  # fmt: skip
KNOWN: dict[tuple[str, str], str] = {(c, v): why for c, vs, why in _ENTRIES for v in vs.split()}


def _load(rel: str, lists: list[str]) -> list[tuple]:
    spec = importlib.util.spec_from_file_location("_sweep_" + rel.replace("/", "_")[:-3], HERE.parent / rel)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tag = rel.split("/")[-1][5:-3]
    return [(f"{tag}:{c[0]}", c[1], c[2], c[3], c[4] if len(c) > 4 else {}) for n in lists for c in getattr(mod, n)]


CASES = [c for rel, lists in REGISTRIES for c in _load(rel, lists)]


def variants(args: list) -> list[tuple[str, list]]:
    arrs = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    out: list[tuple[str, list]] = []
    if not arrs or all(args[i].ndim == 0 for i in arrs):
        return out
    out.append(("0d", [np.asarray(a.reshape(-1)[0] if a.size else a.sum()) if isinstance(a, np.ndarray) else a
                       for a in args]))  # fmt: skip
    first = arrs[0]
    if args[first].ndim:
        out.append(("emptyN", [a[:0] if j == first else a for j, a in enumerate(args)]))
        out.append(("empty-1", [a[..., :0] if j == first else a for j, a in enumerate(args)]))
    if len(arrs) > 1 and len({args[i].shape for i in arrs}) == 1 and args[first].ndim:
        out.append(("emptyall", [a[:0] if isinstance(a, np.ndarray) else a for a in args]))
    if len(arrs) >= 2:
        for i in arrs:
            a = args[i]
            if a.dtype.kind != "f":
                continue
            if a.ndim >= 1:
                out.append((f"drop{i}", [np.asarray(x[0]) if j == i else x for j, x in enumerate(args)]))
                if a.shape[0] > 1:
                    out.append((f"one{i}", [x[:1] if j == i else x for j, x in enumerate(args)]))
            if a.ndim >= 2 and a.shape[-1] > 1:
                out.append((f"last1_{i}", [x[..., :1] if j == i else x for j, x in enumerate(args)]))
    return out


def _flat(o):
    return [x for y in o for x in _flat(y)] if isinstance(o, (tuple, list)) else [o]


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "cpu") else t.detach().numpy()


def _run(L, fn, args, grad):
    ts = []
    for a in args:
        if isinstance(a, np.ndarray):  # on the default device, where the case's own tensors (L.tensor) land
            t = L.as_tensor(np.array(a))
            ts.append(t.requires_grad_(True) if grad and a.dtype.kind == "f" else t)
        else:
            ts.append(a)
    outs = [o for o in _flat(fn(*ts)) if hasattr(o, "shape")]
    values = [(tuple(o.shape), str(o.dtype).replace("torch.", "").replace("ember.", ""), _np(o)) for o in outs]
    leaves = [t for t in ts if getattr(t, "requires_grad", False)]
    diff = [o for o in outs if o.requires_grad]
    grads = None
    if grad and leaves and diff:
        rng = np.random.default_rng(7)
        ups = [L.as_tensor(rng.standard_normal(tuple(o.shape)).astype(_np(o).dtype)).to(o.device) for o in diff]
        grads = [None if g is None else _np(g) for g in L.autograd.grad(diff, leaves, ups, allow_unused=True)]
    return values, grads


def _close(a, b):
    f = np.float64
    return np.allclose(a.astype(f) if a.dtype.kind == "b" else a, b.astype(f) if b.dtype.kind == "b" else b,
                       rtol=1e-6, atol=1e-9, equal_nan=True)  # fmt: skip


def _difference(e, t) -> str | None:
    (ev, eg), (tv, tg) = e, t
    if len(ev) != len(tv):
        return f"{len(ev)} outputs, PyTorch {len(tv)}"
    for k, ((es, ed, ea), (ts, td, ta)) in enumerate(zip(ev, tv, strict=True)):
        if es != ts:
            return f"output {k}: shape {es}, PyTorch {ts}"
        if ed != td:
            return f"output {k}: dtype {ed}, PyTorch {td}"
        if not _close(ea, ta):
            return f"output {k}: values differ"
    if (eg is None) != (tg is None):
        return f"gradients: Ember {'none' if eg is None else 'some'}, PyTorch {'none' if tg is None else 'some'}"
    for k, (a, b) in enumerate(zip(eg or [], tg or [], strict=True)):
        if a is None and b is None:
            continue
        if a is None or b is None:
            if (a if a is not None else b).any():
                return f"gradient {k}: one side None, the other nonzero"
            continue
        if a.shape != b.shape:
            return f"gradient {k}: shape {a.shape}, PyTorch {b.shape}"
        if not _close(a, b):
            return f"gradient {k}: values differ"
    return None


def _finding(efn, tfn, args, grad) -> str | None:
    args = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args]
    try:
        t = _run(torch, tfn, args, grad)
    except Exception as ex:
        t_err: Exception | None = ex
    else:
        t_err = None
    try:
        e = _run(ember, efn, args, grad)
    except Exception as ex:
        if t_err is None:
            return f"Ember raises {type(ex).__name__}: {ex}"
        if isinstance(t_err, RuntimeError) and not isinstance(ex, (RuntimeError, IndexError)):
            return f"both raise, but Ember's {type(ex).__name__} is not a RuntimeError: {ex}"
        return None
    if t_err is not None:
        return f"PyTorch raises ({type(t_err).__name__}: {str(t_err)[:100]}), Ember does not"
    return _difference(e, t)


@pytest.mark.filterwarnings("ignore::UserWarning")  # PyTorch's and Ember's warnings for odd shapes
@pytest.mark.parametrize(("name", "efn", "tfn", "args", "kw"), CASES, ids=[c[0] for c in CASES])
def test_edge_shapes_match_pytorch(name, efn, tfn, args, kw):
    grad = kw.get("grad", True)
    problems = []
    for vname, vargs in variants(list(args)):
        found = _finding(efn, tfn, vargs, grad)
        known = KNOWN.get((name, vname))
        if found and not known:
            problems.append(f"[{vname}] {found}")
        elif known and not found:
            problems.append(f"[{vname}] listed in KNOWN ({known}) but now matches PyTorch: remove the entry")
    assert not problems, f"{name}:\n  " + "\n  ".join(problems)


def test_known_entries_name_real_cases():
    names = {c[0] for c in CASES}
    assert not [k for k in [*KNOWN, *DTYPE_KNOWN] if k[0] not in names]


# -- every registered op with one argument on another backend --------------------------------------------------
# PyTorch refuses a CPU tensor beside a CUDA one in one op; Ember's backends are its devices: every op must refuse
# a mix with an error that names the backends (a RuntimeError), never a misleading one, never a silent result.
_SHAPE_ONLY = {"registry_new:view_as", "registry_new:reshape_as"}  # only other's shape is read (as in PyTorch)
_EACH_ALONE = {"registry_utility:atleast_3d", "registry_utility:broadcast_tensors"}  # one result per tensor
_MOVES = {"registry_utility:type_as"}  # the result takes other's device and backend, as in PyTorch


def _other_backend():
    name = "numpy" if ember.backends.current() == "torch" else "torch"
    if not ember.backends.available()[name]:
        pytest.skip(f"the {name} backend is not available")
    return ember.backends.get(name)


MIXED = [c for c in CASES if sum(isinstance(a, np.ndarray) for a in c[3]) >= 2]


@pytest.mark.parametrize(("name", "efn", "tfn", "args", "kw"), MIXED, ids=[c[0] for c in MIXED])
def test_mixed_backends_are_refused_naming_them(name, efn, tfn, args, kw):
    other = _other_backend()
    arrs = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    for moved in arrs[:2]:
        ts = [ember.from_numpy(np.array(a)) if isinstance(a, np.ndarray) else a for a in args]
        ts[moved] = ts[moved].to(other)
        if name in _SHAPE_ONLY | _EACH_ALONE | _MOVES:
            outs = _flat(efn(*ts))
            if name in _MOVES:
                assert outs[0]._backend is ts[1]._backend
            continue
        with pytest.raises(RuntimeError, match="backend") as info:
            efn(*ts)
        assert isinstance(info.value, ember._errors.DeviceError), f"{name}: {info.value!r}"


# -- every registered op in float32, and with a 0-d operand of the other float dtype -------------------------
# A 0-d tensor is weaker than a dimensioned one in PyTorch's promotion: float32 (n,) with float64 () is float32.
DTYPE_KNOWN = {
    **{(f"functional:{n}", v): _LENIENT for n in ("margin_ranking", "triplet") for v in ("f32+0d64", "f64+0d32")},
}  # fmt: skip


def dtype_variants(args: list) -> list[tuple[str, list]]:
    fl = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    if not fl:
        return []
    out = [("f32", [a.astype(np.float32) if i in fl else a for i, a in enumerate(args)])]
    if len(fl) >= 2:
        for name, big, small in (("f32+0d64", np.float32, np.float64), ("f64+0d32", np.float64, np.float32)):
            out.append((name, [(a.astype(big) if i == fl[0] else np.asarray(a.reshape(-1)[0], dtype=small))
                               if i in fl else a for i, a in enumerate(args)]))  # fmt: skip
    return out


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("name", "efn", "tfn", "args", "kw"), CASES, ids=[c[0] for c in CASES])
def test_dtypes_match_pytorch(name, efn, tfn, args, kw):
    problems = []
    for vname, vargs in dtype_variants(list(args)):
        try:
            t = _run(torch, tfn, vargs, False)[0]
        except Exception as ex:
            t_err: Exception | None = ex
        else:
            t_err = None
        try:
            e = _run(ember, efn, vargs, False)[0]
        except Exception as ex:
            found = None if t_err is not None else f"Ember raises {type(ex).__name__}: {ex}"
        else:
            found = f"PyTorch raises ({str(t_err)[:80]}), Ember does not" if t_err else None
            for k, ((es, ed, ea), (ts, td, ta)) in enumerate(zip(e, t, strict=False)):
                if (es, ed) != (ts, td):
                    found = f"output {k}: {es} {ed}, PyTorch {ts} {td}"
                elif ea.dtype.kind == "f" and not np.allclose(ea, ta, rtol=1e-4, atol=1e-5, equal_nan=True):
                    found = f"output {k}: values differ"
        known = DTYPE_KNOWN.get((name, vname))
        if found and not known:
            problems.append(f"[{vname}] {found}")
        elif known and not found:
            problems.append(f"[{vname}] listed in DTYPE_KNOWN ({known}) but now matches PyTorch: remove the entry")
    assert not problems, f"{name}:\n  " + "\n  ".join(problems)
