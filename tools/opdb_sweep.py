"""Run PyTorch's operator database (``op_db``) through Ember and tabulate where Ember differs.

For every OpInfo (its variants too; sparse layouts, CUDA-only jiterator entries and PyTorch's private ``_``
operators left out), Ember's operator is found by the OpInfo's name (``ember.X``, ``ember.nn.functional.X``,
``ember.linalg.X``, ... or the Tensor method ``X``; ``tests/ops/_opdb_cases.ember_fn``) and op_db's first samples
(float64 and float32; complex128 with ``--complex``) are run through it and compared with PyTorch's results:

* forward: each output's shape, dtype and values;
* gradients of the sum of the floating outputs (a complex output as its real and imaginary parts) with respect to
  every input that PyTorch's sample marks, against PyTorch's backward; on the first float64 samples also Ember's
  gradient against a central finite difference of Ember's own forward (a note: kinks make false alarms);
* the method variant ``Tensor.X`` and the in-place variant ``Tensor.X_`` (run on a non-leaf copy of the input, so
  its gradient is checked too) where op_db lists them;
* samples PyTorch refuses, and op_db's ``error_inputs``: Ember must raise, preferably the same exception type.

Each OpInfo gets the flags it earns: ``missing``, ``forward`` (a value, shape or dtype differs), ``gradient``
(differs from PyTorch's), ``raises`` (Ember raises where PyTorch gives a result), ``no-raise`` (Ember gives a
result where PyTorch raises: a refused sample or an error input); one with none ``passes``. The table goes to
``--out`` (markdown), with counts, one line per flagged OpInfo and the first messages of each.

Run from the repository root (importing op_db the first time takes a minute; the samples are cached in the temp
folder by ``tests/ops/_opdb_cases.py``)::

    PYTHONPATH=src python tools/opdb_sweep.py --out /tmp/opdb_sweep.md [--samples 5] [--only add,mul] [--complex]
"""

from __future__ import annotations

import argparse
import builtins
import os
import signal
import sys
import time
import warnings
from collections import defaultdict
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "ops"))
import _opdb_cases as oc

FLAGS = ("missing", "forward", "gradient", "raises", "no-raise")
EXCLUDE = ("sparse.", "to_sparse", "jiterator", "_", "signal.windows.kaiser")
#: OpInfo names whose values are random or uninitialised: only shapes and dtypes are compared, no gradients
RANDOM = (
    "empty", "new_empty", "rand", "randn", "randint", "normal", "uniform", "bernoulli", "multinomial", "cauchy",
    "exponential", "geometric", "log_normal", "nn.functional.dropout", "nn.functional.alpha_dropout",
    "nn.functional.feature_alpha_dropout", "nn.functional.rrelu", "randperm",
)  # fmt: skip
TOL = {"float64": (1e-7, 1e-9, 1e-6, 1e-8), "float32": (1e-4, 1e-5, 1e-3, 1e-4)}
TOL["complex128"] = TOL["float64"]
#: OpInfo name -> (rtol, atol) of float64 forwards where PyTorch's own result is the less exact one (its Cephes
#: Bessel functions are good to ~3e-7 for |x| > 5; SciPy's, Ember's kernel on NumPy, agree with mpmath)
LOOSE = {f"special.bessel_{f}": (1e-6, 1e-6) for f in ("j0", "j1", "y0", "y1")}
#: OpInfos of the random in-place methods (op_db names ``cauchy`` for ``Tensor.cauchy_``)
RANDOM_IN_PLACE = ("cauchy", "exponential", "geometric", "log_normal", "uniform")
#: samples whose values are random: a (name, predicate on the case) pair
RANDOM_SAMPLES = {
    "nn.functional.scaled_dot_product_attention": lambda c: c.kwargs.get("dropout_p", 0.0) > 0,
    "nn.functional.multi_head_attention_forward": lambda c: c.kwargs.get("training", True) and c.inputs[10] > 0,
    "nn.functional.fractional_max_pool2d": lambda c: "_random_samples" not in c.kwargs,
    "nn.functional.fractional_max_pool3d": lambda c: "_random_samples" not in c.kwargs,
}
#: error_inputs refused because ``out=`` overlaps an input: not representable once the sample is copied to NumPy
OVERLAP = ("unsupported operation", "single memory location")
#: decompositions whose vectors are defined up to sign/phase: only these outputs compared, no gradient of the sum
GAUGE = {"linalg.eig": (0,), "linalg.eigh": (0,), "linalg.svd": (1,), "svd": (1,), "svd_lowrank": (1,),
         "pca_lowrank": (1,)}  # fmt: skip
_PRIVATE = "PyTorch's ATen-internal or private operator (no public PyTorch API)"
#: op_db entries Ember does not provide, and why (the op_db tests expect them "missing")
NOT_PROVIDED: dict[str, str] = {
    **{k: _PRIVATE for k in (
        "grid_sampler_2d", "grid_sampler_3d", "max_pool2d_with_indices_backward", "native_dropout_backward",
        "native_group_norm", "slice", "torch._scaled_mm", "torch._scaled_mm_v2",
        "torch.ops.aten._efficient_attention_forward", "torch.ops.aten._flash_attention_forward",
        "torch.ops.aten._safe_softmax.default",
    )},
    "chalf": "complex32 is not an Ember dtype",
    "hash_tensor": "not implemented (new in PyTorch 2.9, rarely used)",
}  # fmt: skip

#: OpInfo key -> why a flag is PyTorch's fault, not Ember's: listed apart, not counted as a failure
KNOWN = {
    "as_strided_scatter": "PyTorch's input gradient is wrong (its own gradcheck fails); Ember's passes gradcheck "
    "(tests/ops/test_opdb_complex.py)",
    "nn.functional.ctc_loss": "PyTorch's gradient w.r.t. log_probs is that through a log_softmax it assumes "
    "(pytorch/pytorch#52241); Ember's is the derivative of its forward (tests/ops/test_opdb_sweep_fixes.py)",
    "as_strided.partial_views": "the sample's input is a view into a larger storage that as_strided addresses; "
    "the NumPy copy of the view does not carry that storage",
    "masked.argmax": "PyTorch's prototype torch.masked.argmax returns the indices in the input's float dtype; "
    "Ember's are int64 like argmax's (values equal)",
    "masked.argmin": "as masked.argmax",
    "linalg.norm.subgradients_at_zero": "the 2-norm's second derivative at the zero vector does not exist: PyTorch "
    "gives nan (op_db marks its own gradgrad at zero an expected failure), Ember 0, the derivative of its subgradient "
    "convention (tests/ops/test_grads_at_kinks.py)",
    "nn.functional.linear_cross_entropy.chunked": "PyTorch's chunked path computes its gradient without a graph (not "
    "twice differentiable: its second derivative reads 0); Ember's is the reference path's (the unchunked OpInfo's)",
    "nn.functional.linear_cross_entropy.chunked_none": "as nn.functional.linear_cross_entropy.chunked",
}


def _key_fns() -> dict[str, Any]:
    """op_db ops (by OpInfo key) that are lambdas reordering or post-processing the public function's arguments."""
    import ember

    F = ember.nn.functional
    return {
        "nn.functional.embedding": lambda weight, idx, **kw: F.embedding(idx, weight, **kw),
        "nn.functional.embedding_bag": lambda weight, idx, **kw: F.embedding_bag(idx, weight, **kw),
        "linalg.lstsq.grad_oriented": lambda a, b, driver: ember.linalg.lstsq(a, b, driver=driver)[:2],
        "linalg.pinv.singular": lambda a, b: ember.linalg.pinv(a @ b.mT),
        "normal.in_place": lambda inp, *args, **kw: inp.normal_(*args, **kw),
        **{n: (lambda inp, *args, _n=n, **kw: getattr(inp, f"{_n}_")(*args, **kw)) for n in RANDOM_IN_PLACE},
        "normal.number_mean": lambda std, mean, *args, **kw: ember.normal(mean, std, *args, **kw),
        **{
            f"{p}polygamma.{p.replace('.', '_')}polygamma_n_{n}": (
                lambda x, n, _f=ember.special.polygamma if p else ember.polygamma, **kw: _f(n, x, **kw)
            )
            for p in ("", "special.")
            for n in range(5)
        },
    }


class SweepTimeoutError(Exception):
    pass


def _alarm(*_: Any) -> None:
    raise SweepTimeoutError("timed out")


def _flat(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [o for v in out for o in _flat(v)]
    return [out]


def _np(x: Any) -> np.ndarray:
    import ember

    return x.detach().numpy() if isinstance(x, ember.Tensor) else np.asarray(x)


def _leaves(x: Any) -> list[Any]:
    import ember

    if isinstance(x, ember.Tensor):
        return [x] if x.requires_grad else []
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _leaves(v)]
    return []


def _total(outs: list[Any]) -> Any:
    import ember

    floats = [o for o in outs if isinstance(o, ember.Tensor) and (o.dtype.is_floating_point or o.dtype.is_complex)]
    if not floats:
        return None
    return sum((ember.view_as_real(o) if o.dtype.is_complex else o).sum() for o in floats)


def _random(c: oc.Case) -> bool:
    pick = RANDOM_SAMPLES.get(c.name)
    return c.name.startswith(RANDOM) or (pick is not None and bool(pick(c)))


class Sweep:
    def __init__(self, samples: int, fd_samples: int) -> None:
        self.samples, self.fd_samples = samples, fd_samples
        self.flags: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        self.notes: dict[str, list[str]] = defaultdict(list)
        self.ran: set[str] = set()
        self.n_cases = 0

    def flag(self, key: str, flag: str, msg: str) -> None:
        self.flags[key][flag].append(msg)

    # --- forward and gradient -------------------------------------------------------------------------------
    def compare_outputs(self, key: str, c: oc.Case, outs: list[Any], where: str) -> bool:
        rtol, atol = LOOSE.get(c.name, TOL[c.dtype][:2]) if c.dtype == "float64" else TOL[c.dtype][:2]
        if len(outs) != len(c.outputs or []):
            self.flag(key, "forward", f"{where}#{c.index} {c.dtype}: {len(outs)} outputs, PyTorch {len(c.outputs)}")
            return False
        for k, (o, want) in enumerate(zip(outs, c.outputs or [], strict=True)):
            got, want = _np(o), np.asarray(want)
            tag = f"{where}#{c.index} {c.dtype} out{k}"
            if got.shape != want.shape:
                self.flag(key, "forward", f"{tag}: shape {got.shape} != {want.shape}")
                return False
            if got.dtype != want.dtype and c.name not in ("masked.argmax", "masked.argmin"):
                self.flag(key, "forward", f"{tag}: dtype {got.dtype} != {want.dtype}")
                return False
            if _random(c) or k not in GAUGE.get(c.name, (k,)):
                continue
            scale = (
                float(np.nanmax(np.abs(want), initial=0.0, where=np.isfinite(want))) if want.dtype.kind in "fc" else 0
            )
            try:  # (float32: the rounding of the largest element counts too, as in the eigen/exp of big matrices)
                np.testing.assert_allclose(
                    got, want, rtol=rtol, atol=max(atol, 1e-6 * scale) if c.dtype == "float32" else atol, equal_nan=True
                )
            except AssertionError as e:
                detail = " ".join(line.strip() for line in str(e).splitlines() if "Max" in line or "Mismatched" in line)
                self.flag(key, "forward", f"{tag}: values differ ({detail})")
                return False
            except TypeError:  # objects NumPy cannot compare (strings, dtypes ...)
                if not np.array_equal(got, want):
                    self.flag(key, "forward", f"{tag}: {got!r} != {want!r}")
                    return False
        return True

    def compare_grads(self, key: str, c: oc.Case, inputs: list[Any], outs: list[Any], where: str) -> None:
        import ember

        if c.grads is None or _random(c) or c.name in GAUGE:
            return
        leaves = _leaves(inputs)
        total = _total(outs)
        top = [(i, x) for i, x in enumerate(inputs) if isinstance(x, ember.Tensor) and x.requires_grad]
        if not leaves or not top:
            return
        wanted = {i: c.grads[i] for i, _ in top if c.grads[i] is not None}
        if total is None or not total.requires_grad:
            if any(w.any() for w in wanted.values()):
                self.flag(key, "gradient", f"{where}#{c.index} {c.dtype}: no gradient, PyTorch's is nonzero")
            return
        try:
            gs = ember.autograd.grad(total, [x for _, x in top], allow_unused=True)
        except Exception as e:
            self.flag(key, "raises", f"{where}#{c.index} {c.dtype} backward: {type(e).__name__}: {str(e)[:150]}")
            return
        rtol, atol = TOL[c.dtype][2:]
        for (i, x), g in zip(top, gs, strict=True):
            want = wanted.get(i)
            if want is None:
                continue
            got = np.zeros(x.shape, want.dtype) if g is None else g.numpy()
            tag = f"{where}#{c.index} {c.dtype} grad{i}"
            if got.shape != want.shape:
                self.flag(key, "gradient", f"{tag}: shape {got.shape} != {want.shape}")
                continue
            try:
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
            except AssertionError as e:
                detail = " ".join(line.strip() for line in str(e).splitlines() if "Max" in line or "Mismatched" in line)
                self.flag(key, "gradient", f"{tag}: differs ({detail})")

    def finite_difference(self, key: str, fn: Any, c: oc.Case) -> None:
        """Ember's gradient of the sum against a central difference of Ember's forward (small float64 inputs)."""
        import ember

        inputs, kwargs = oc.to_ember(c.inputs), oc.ember_value(c.kwargs)
        top = [i for i, x in enumerate(inputs) if isinstance(x, ember.Tensor) and x.requires_grad]
        if not top or any(inputs[i].numel() > 32 for i in top):
            return
        total = _total(_flat(fn(*inputs, **kwargs)))
        if total is None or not total.requires_grad:
            return
        gs = ember.autograd.grad(total, [inputs[i] for i in top], allow_unused=True)
        base = [c.inputs[i].value for i in top]

        def f(vals: list[np.ndarray]) -> float:
            args = list(oc.to_ember(c.inputs))
            for i, v in zip(top, vals, strict=True):
                args[i] = ember.tensor(v)
            with ember.no_grad():
                t = _total(_flat(fn(*args, **oc.ember_value(c.kwargs))))
            return float(t.item())

        eps = 1e-6
        for n, (i, g) in enumerate(zip(top, gs, strict=True)):
            got = np.zeros(base[n].shape) if g is None else g.numpy()
            num = np.zeros(base[n].shape, dtype=base[n].dtype)
            for idx in np.ndindex(*base[n].shape):
                for step, sign in ((eps, 1.0), (eps * 1j, 1j)) if base[n].dtype.kind == "c" else ((eps, 1.0),):
                    vals = [b.copy() for b in base]
                    vals[n][idx] += step
                    hi = f(vals)
                    vals[n][idx] -= 2 * step
                    num[idx] += sign * (hi - f(vals)) / (2 * eps)
            if not np.allclose(got, num, rtol=1e-4, atol=1e-5, equal_nan=True):
                err = float(np.nanmax(np.abs(got - num)))
                self.notes[key].append(
                    f"#{c.index} grad{i}: Ember's gradient differs from finite differences by {err:.2e}"
                )

    # --- one OpInfo -----------------------------------------------------------------------------------------
    def run_case(self, key: str, fn: Any, c: oc.Case, where: str = "") -> None:
        import ember

        self.n_cases += 1
        inputs, kwargs = oc.to_ember(c.inputs), oc.ember_value(c.kwargs)
        if c.outputs is None:  # PyTorch refused the sample
            try:
                with ember.no_grad():
                    fn(*inputs, **kwargs)
            except SweepTimeoutError:
                raise
            except Exception:
                return
            self.flag(key, "no-raise", f"{where}#{c.index} {c.dtype}: PyTorch raises ({(c.error or '')[:100]})")
            return
        try:
            outs = _flat(fn(*inputs, **kwargs))
        except SweepTimeoutError:
            raise
        except Exception as e:
            self.flag(key, "raises", f"{where}#{c.index} {c.dtype}: {type(e).__name__}: {str(e)[:150]}")
            return
        if self.compare_outputs(key, c, outs, where):
            self.compare_grads(key, c, inputs, outs, where)

    def run_inplace(self, key: str, name: str, c: oc.Case) -> None:
        """``Tensor.name_`` on a non-leaf copy of the input: the input's values become the result, gradients flow."""
        import ember

        method = getattr(ember.Tensor, f"{name}_", None)
        if c.outputs is None or not c.outputs or not isinstance(c.inputs[0], oc.Arr):
            return
        want = np.asarray(c.outputs[0])
        if want.shape != c.inputs[0].value.shape or want.dtype != c.inputs[0].value.dtype:
            return  # PyTorch's in-place variant would refuse (or cast): not compared
        if method is None:
            self.flag(key, "missing", f"Tensor.{name}_ (in-place variant)")
            return
        inputs, kwargs = oc.to_ember(c.inputs), oc.ember_value(c.kwargs)
        x = inputs[0].clone() if inputs[0].requires_grad else inputs[0]
        try:
            y = method(x, *inputs[1:], **kwargs)
        except SweepTimeoutError:
            raise
        except Exception as e:
            self.flag(key, "raises", f"{name}_#{c.index} {c.dtype}: {type(e).__name__}: {str(e)[:150]}")
            return
        if y is not x:
            self.flag(key, "forward", f"{name}_#{c.index}: returns a new tensor, not self")
        sub = c._replace(outputs=[c.outputs[0]])
        if self.compare_outputs(key, sub, [x], f"{name}_"):
            self.compare_grads(key, sub, inputs, [x], f"{name}_")
        others = [i for i, v in enumerate(inputs[1:], 1) if isinstance(v, ember.Tensor) and v.requires_grad]
        if inputs[0].requires_grad and others and c.grads is not None:  # again with only the others in the graph
            inputs = [inputs[0].detach().clone(), *inputs[1:]]
            x = inputs[0]
            try:
                method(x, *inputs[1:], **kwargs)
            except SweepTimeoutError:
                raise
            except Exception as e:
                self.flag(key, "raises", f"{name}_#{c.index} {c.dtype} (self without grad): {type(e).__name__}: {e}")
                return
            self.compare_grads(key, sub._replace(grads=[None, *c.grads[1:]]), inputs, [x], f"{name}_ (self no grad)")

    def run_errors(self, key: str, fn: Any, errs: list[oc.ErrorCase]) -> None:
        import ember

        for e in errs:
            if any(m in e.error_regex for m in OVERLAP):
                continue  # the sample's out= aliases an input: its NumPy copy does not
            inputs, kwargs = oc.to_ember(e.inputs), oc.ember_value(e.kwargs)
            try:
                with ember.no_grad():
                    fn(*inputs, **kwargs)
            except SweepTimeoutError:
                raise
            except Exception as err:
                want = getattr(builtins, e.error_type, None)
                if isinstance(want, type) and not isinstance(err, want):
                    self.notes[key].append(f"error_input#{e.index}: {type(err).__name__}, PyTorch {e.error_type}")
                continue
            self.flag(key, "no-raise", f"error_input#{e.index}: PyTorch raises {e.error_type}")

    def run_key_safely(self, key: str, cs: list[oc.Case], meta: oc.Meta, errs: list[oc.ErrorCase]) -> None:
        """``run_key``, an exception outside the operator calls (a sample Ember cannot take in) flagged ``raises``."""
        try:
            self.run_key(key, cs, meta, errs)
        except SweepTimeoutError:
            raise
        except Exception as e:
            self.flag(key, "raises", f"sweep: {type(e).__name__}: {str(e)[:150]}")

    def run_key(self, key: str, cs: list[oc.Case], meta: oc.Meta, errs: list[oc.ErrorCase]) -> None:
        import ember

        name = meta.name
        fn = _key_fns().get(key) or oc.ember_fn(name)
        if fn is None:
            self.flag(key, "missing", f"no ember.{name} nor Tensor.{name}")
            return
        self.ran.add(key)
        plain = "." not in name and not name.startswith("__")
        method = getattr(ember.Tensor, name, None) if plain and meta.method else None
        fd_done = 0
        for c in cs:
            self.run_case(key, fn, c)
            if method is not None and method is not fn:
                self.run_case(key, method, c, where="method")
            if plain and meta.inplace and not name.endswith("_"):
                self.run_inplace(key, name, c)
            fd = fd_done < self.fd_samples and c.dtype == "float64" and c.grads is not None
            if fd and not _random(c) and c.name not in GAUGE and not self.flags[key]:
                fd_done += 1
                try:
                    self.finite_difference(key, fn, c)
                except SweepTimeoutError:
                    raise
                except Exception as e:
                    self.notes[key].append(f"#{c.index} finite difference: {type(e).__name__}: {str(e)[:100]}")
        self.run_errors(key, fn, errs)


def _report(sweep: Sweep, keys: list[str], path: str, elapsed: float) -> str:
    known = [k for k in keys if k in KNOWN and any(sweep.flags[k].values())]
    counted = [k for k in keys if k not in known]
    counts = {f: sum(1 for k in counted if sweep.flags[k].get(f)) for f in FLAGS}
    passes = sum(1 for k in counted if not any(sweep.flags[k].values()))
    summary = (
        f"{len(keys)} OpInfos ({sweep.n_cases} samples): "
        + ", ".join(f"{f} {counts[f]}" for f in FLAGS)
        + f", passes {passes}, PyTorch's fault {len(known)} ({elapsed:.0f} s)"
    )
    lines = [
        "# op_db sweep",
        "",
        summary,
        "",
        "| OpInfo | " + " | ".join(FLAGS) + " | first message |",
        "|---" * 7 + "|",
    ]
    for k in counted:
        fl = sweep.flags[k]
        if not any(fl.values()):
            continue
        first = next(m for f in FLAGS for m in fl.get(f, []))
        cells = [str(len(fl[f])) if fl.get(f) else "" for f in FLAGS]
        lines.append(f"| {k} | " + " | ".join(cells) + f" | {first.replace('|', '/')[:160]} |")
    lines += [
        "",
        "## Differences that are not Ember's: PyTorch bugs, samples NumPy cannot hold (not counted above)",
        "",
    ]
    lines += [f"- **{k}**: {KNOWN[k]}" for k in known]
    lines += ["", "## Messages", ""]
    for k in keys:
        msgs = [f"{f}: {m}" for f in FLAGS for m in sweep.flags[k].get(f, [])] + [f"note: {m}" for m in sweep.notes[k]]
        if msgs:
            lines.append(f"- **{k}**")
            lines += [f"  - {m}" for m in msgs[:12]] + ([f"  - ... {len(msgs) - 12} more"] if len(msgs) > 12 else [])
    lines += ["", "## Passing", "", ", ".join(k for k in keys if not any(sweep.flags[k].values()))]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return summary


def load(
    samples: int = 5, with_complex: bool = False
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], list[str]]:
    """The cached cases (float64 and float32, complex128 too ``with_complex``), error inputs, metadata and the
    OpInfo keys swept."""
    dtypes = ("float64", "float32", "complex128") if with_complex else ("float64", "float32")
    tag = "sweep-v1" + ("-c" if with_complex else "")
    cases = oc.cases(("",), tag, dtypes, EXCLUDE, max_samples=samples, variants=True)
    cases.update(oc.cases(("__r", "__getitem__"), tag + "-dunder", dtypes, max_samples=samples))
    errors, meta = oc.error_cases()
    keys = sorted(k for k in meta if not k.startswith(EXCLUDE) or k.startswith(("__r", "__getitem__")))
    return cases, errors, meta, keys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="opdb_sweep.md", help="where the markdown table goes")
    ap.add_argument("--samples", type=int, default=5, help="op_db samples per OpInfo and dtype")
    ap.add_argument("--fd-samples", type=int, default=2, help="float64 samples checked by finite differences")
    ap.add_argument("--only", default="", help="comma-separated OpInfo keys (name or name.variant)")
    ap.add_argument("--complex", action="store_true", help="complex128 samples too")
    ap.add_argument("--timeout", type=int, default=20, help="seconds per OpInfo")
    args = ap.parse_args(argv)

    t0 = time.time()
    cases, errors, meta, keys = load(args.samples, args.complex)
    if args.only:
        keys = [k for k in keys if k in args.only.split(",")]
    print(f"{len(keys)} OpInfos, cases ready in {time.time() - t0:.0f} s", flush=True)

    sweep = Sweep(args.samples, args.fd_samples)
    signal.signal(signal.SIGALRM, _alarm)
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    for n, k in enumerate(keys):
        signal.alarm(args.timeout)
        try:
            sweep.run_key_safely(k, cases.get(k, []), meta[k], errors.get(k, []))
        except SweepTimeoutError:
            sweep.flag(k, "raises", f"timed out after {args.timeout} s")
        finally:
            signal.alarm(0)
        if n % 100 == 99:
            print(f"  {n + 1}/{len(keys)} ({time.time() - t0:.0f} s)", flush=True)
    summary = _report(sweep, keys, args.out, time.time() - t0)
    print(summary)
    print(f"table: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
