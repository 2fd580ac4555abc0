"""``tools/opdb_sweep.py``'s judge widened: where its first five contiguous float samples cannot see a wrong answer.

Modes (``--mode``, comma-separated; each flags OpInfos like ``opdb_sweep``: missing/forward/gradient/raises/no-raise):

* ``all``: every op_db sample (float64, float32), not the first five: forward, gradient, method, in-place, refusals;
* ``noncontig``: every float tensor argument made a strided view (every other element of a larger tensor) and, for
  2+ dims, a transposed view, as leaves: values and gradients against PyTorch's (the same values, so PyTorch's
  contiguous results are the reference); also that the inputs are not written to;
* ``gradgrad``: float64 samples of OpInfos with ``supports_gradgrad``: the gradient of ``sum_i <w_i, g_i>`` (``g_i``
  the create_graph gradient of the sum of the float outputs, ``w_i`` fixed weights) against PyTorch's;
* ``inplace-view``: ``Tensor.X_`` applied to a strided and to a transposed view of a clone of a leaf: the base's
  values and the leaf's gradient (PyTorch's gradient at the view's elements, 1 elsewhere), the other arguments'
  gradients;
* ``out``: ``X(..., out=o)`` for Ember's ``out=`` operators: an ``o`` of the result's shape and an empty one
  (resized); the values and that ``o`` is returned;
* ``dtypes``: every sample in int64, int32, uint8, bool, float16 and bfloat16: the result dtype must be PyTorch's;
  integer/bool values exact, half values within 1e-2 (float16) / 2e-2 (bfloat16) relative to the largest value.

Counts (OpInfos flagged per category; all six modes; main d596a62 -> branch gopdb16, /work/notes/gopdb16.md):

* every sample, NumPy backend: forward 65 -> 33, gradient 7 -> 3, raises 29 -> 21, no-raise 39 -> 39, missing 15,
  passes 536 -> 573 (of 684);
* first 4 samples per dtype, NumPy: forward 49 -> 24, gradient 1 -> 1, raises 14 -> 8, passes 564 -> 594;
  torch backend: forward 42 -> 21, gradient 1 -> 1, raises 14 -> 8, passes 570 -> 596.

Then main 161a231 -> branch gopdb17 (/work/notes/gopdb17.md; PyTorch's fault 5 -> 8, not counted):

* every sample, NumPy: missing 14 -> 13, forward 33 -> 25, gradient 3 -> 2, raises 20 -> 4, no-raise 39 -> 34,
  passes 575 -> 600;
* first 4 samples per dtype, NumPy: missing 14 -> 13, forward 24 -> 13, gradient 1 -> 0, raises 8 -> 3, no-raise
  39 -> 34, passes 595 -> 615; torch backend: forward 21 -> 11, gradient 1 -> 0, raises 8 -> 3, passes 597 -> 616.

Run from the repository root (the wide caches take ~10 min to build once; ``tests/ops/_opdb_wide.py``)::

    PYTHONPATH=src python tools/opdb_sweep_wide.py --mode noncontig,gradgrad --out /tmp/wide.md [--only add,mul]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import warnings
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "ops"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _opdb_cases as oc
import _opdb_wide as ow
import opdb_sweep as base

MODES = ("all", "noncontig", "gradgrad", "inplace-view", "out", "dtypes")
#: the dtypes of the ``dtypes`` mode
OTHER_DTYPES = ("int64", "int32", "uint8", "bool", "float16", "bfloat16")
#: tolerances (rtol, atol relative to the largest magnitude) of half-precision forwards
HALF_TOL = {"float16": 1e-2, "bfloat16": 2e-2, "float32": 1e-5, "float64": 1e-9, "complex64": 1e-5, "complex128": 1e-9}
#: OpInfo name -> its outputs that are indices of possibly tied values (integer, bool and half samples tie often)
TIES = {"sort": (1,), "argsort": (0,), "topk": (1,), "kthvalue": (1,), "mode": (1,), "median": (1,),
        "nanmedian": (1,), "max": (1,), "min": (1,), "cummax": (1,), "cummin": (1,)}  # fmt: skip
#: OpInfos whose op_db op is not Ember's function of the same arguments in ``out`` mode
NO_OUT = ("max.reduction_no_dim", "min.reduction_no_dim", "nonzero")
#: in-place variants that change the view's shape/strides, not the base's values (``transpose_`` ...)
META_INPLACE = ("transpose", "t", "swapdims", "swapaxes", "squeeze", "unsqueeze", "as_strided", "resize", "resize_as",
                "detach")  # fmt: skip
#: OpInfos whose result depends on the input's strides (PyTorch refuses or reads other elements): no view inputs
STRIDED = ("view", "view_as", "view_as_complex", "as_strided", "as_strided_copy", "as_strided_scatter",
           "as_strided.partial_views")  # fmt: skip


def _strided(value: np.ndarray, grad: bool) -> Any:
    """An Ember leaf with ``value``'s values that is a view taking every other element of a larger tensor."""
    import ember

    if value.ndim == 0:
        big = np.stack([value, np.zeros_like(value)])
        return ember.tensor(big)[0].detach().requires_grad_(grad)
    big = np.zeros((*value.shape[:-1], 2 * value.shape[-1]), value.dtype)
    big[..., ::2] = value
    return ember.tensor(big)[..., ::2].detach().requires_grad_(grad)


def _transposed(value: np.ndarray, grad: bool) -> Any:
    import ember

    return ember.tensor(np.ascontiguousarray(value.swapaxes(-1, -2))).mT.detach().requires_grad_(grad)


def _views(x: Any, how: str) -> Any:
    """A case's inputs with each float Arr of 1+ elements made a view (``how``: strided or transposed)."""
    if isinstance(x, oc.Arr) and x.value.dtype.kind in "fc" and x.value.size > 0:
        if how == "strided":
            return _strided(x.value, x.grad)
        if x.value.ndim >= 2:
            return _transposed(x.value, x.grad)
        return oc.to_ember(x)
    if isinstance(x, oc.Arr):
        return oc.to_ember(x)
    if isinstance(x, list):
        return [_views(v, how) for v in x]
    if isinstance(x, tuple):
        return tuple(_views(v, how) for v in x)
    if isinstance(x, dict):
        return {k: _views(v, how) for k, v in x.items()}
    return oc.ember_value(x)


class Wide(base.Sweep):
    def _call(self, key: str, fn: Any, inputs: list[Any], kwargs: dict[str, Any], tag: str) -> Any:
        try:
            return base._flat(fn(*inputs, **kwargs))
        except base.SweepTimeoutError:
            raise
        except Exception as e:
            self.flag(key, "raises", f"{tag}: {type(e).__name__}: {str(e)[:150]}")
            return None

    # --- non-contiguous inputs ------------------------------------------------------------------------------
    def run_noncontig(self, key: str, fn: Any, c: oc.Case) -> None:
        if c.outputs is None or base._random(c) or key in STRIDED:
            return
        for how in ("strided", "transposed"):
            inputs, kwargs = _views(c.inputs, how), _views(c.kwargs, how)
            before = [x.detach().clone() for x in base._leaves(inputs)]
            if how == "transposed" and not any(
                isinstance(a, oc.Arr) and a.value.ndim >= 2 and a.value.dtype.kind in "fc" for a in c.inputs
            ):
                continue
            outs = self._call(key, fn, inputs, kwargs, f"{how}#{c.index} {c.dtype}")
            if outs is None:
                continue
            if self.compare_outputs(key, c, outs, how):
                self.compare_grads(key, c, inputs, outs, how)
            after = base._leaves(inputs)
            for b, a in zip(before, after, strict=True):
                if not np.array_equal(b.numpy(), a.detach().numpy(), equal_nan=True):
                    self.flag(key, "forward", f"{how}#{c.index} {c.dtype}: an input was written to")

    # --- second-order gradients -----------------------------------------------------------------------------
    def run_gradgrad(self, key: str, fn: Any, c: ow.WideCase) -> None:
        import ember

        if c.gradgrads is None or c.outputs is None or base._random(c) or c.name in base.GAUGE:
            return
        inputs, kwargs = oc.to_ember(c.inputs), oc.ember_value(c.kwargs)
        top = [(i, x) for i, x in enumerate(inputs) if isinstance(x, ember.Tensor) and x.requires_grad]
        tag = f"gradgrad#{c.index}"
        outs = self._call(key, fn, inputs, kwargs, tag)
        total = None if outs is None else base._total(outs)
        if not top or total is None or not total.requires_grad:
            return
        try:
            gs = ember.autograd.grad(total, [x for _, x in top], allow_unused=True, create_graph=True)
            terms = [
                (g * ember.tensor(ow.weights(tuple(g.shape)))).sum() for g in gs if g is not None and g.requires_grad
            ]
            ggs: list[Any] = (
                list(ember.autograd.grad(sum(terms), [x for _, x in top], allow_unused=True))
                if terms
                else [None] * len(top)
            )
        except base.SweepTimeoutError:
            raise
        except Exception as e:
            self.flag(key, "raises", f"{tag} backward: {type(e).__name__}: {str(e)[:150]}")
            return
        for (i, x), g in zip(top, ggs, strict=True):
            want = c.gradgrads[i]
            if want is None:
                continue
            got = np.zeros(x.shape, want.dtype) if g is None else g.numpy()
            if got.shape != want.shape:
                self.flag(key, "gradient", f"{tag} grad{i}: shape {got.shape} != {want.shape}")
            elif not np.allclose(got, want, rtol=1e-6, atol=1e-8, equal_nan=True):
                err = float(np.nanmax(np.abs(got - want)))
                self.flag(key, "gradient", f"{tag} grad{i}: differs from PyTorch's by {err:.2e}")

    # --- in-place on a view of a clone ------------------------------------------------------------------------
    def run_inplace_view(self, key: str, name: str, c: oc.Case) -> None:
        import ember

        method = getattr(ember.Tensor, f"{name}_", None)
        if name in META_INPLACE or method is None or c.outputs is None or not c.outputs:
            return
        if not isinstance(c.inputs[0], oc.Arr):
            return
        x0, want = c.inputs[0].value, np.asarray(c.outputs[0])
        if want.shape != x0.shape or want.dtype != x0.dtype or x0.dtype.kind not in "fc" or x0.size == 0:
            return
        for how in ("strided", "transposed"):
            if how == "transposed" and x0.ndim < 2:
                continue
            if how == "strided":
                big = np.full((*x0.shape[:-1], 2 * x0.shape[-1]) if x0.ndim else (2,), 0.5, x0.dtype)
                sel: Any = (Ellipsis, slice(None, None, 2)) if x0.ndim else (0,)
                big[sel] = x0
            else:
                big = np.ascontiguousarray(x0.swapaxes(-1, -2))
            leaf = ember.tensor(big).requires_grad_(c.inputs[0].grad)
            others = oc.to_ember(c.inputs[1:])
            inputs = [leaf, *others]
            kwargs = oc.ember_value(c.kwargs)
            b = leaf.clone()
            view = b[sel] if how == "strided" else b.mT
            tag = f"{name}_ {how} view#{c.index} {c.dtype}"
            try:
                method(view, *others, **kwargs)
            except base.SweepTimeoutError:
                raise
            except Exception as e:
                self.flag(key, "raises", f"{tag}: {type(e).__name__}: {str(e)[:150]}")
                continue
            expect = big.copy()
            if how == "strided":
                expect[sel] = want
            else:
                expect = np.ascontiguousarray(want.swapaxes(-1, -2))
            sub = c._replace(outputs=[expect])
            if not self.compare_outputs(key, sub, [b], tag) or c.grads is None:
                continue
            grads = list(c.grads)
            if grads[0] is not None:
                g0 = np.ones_like(big)
                if how == "strided":
                    g0[sel] = grads[0]
                else:
                    g0 = np.ascontiguousarray(grads[0].swapaxes(-1, -2))
                grads[0] = g0
            self.compare_grads(key, sub._replace(grads=grads), inputs, [b], tag)

    # --- out= -------------------------------------------------------------------------------------------------
    def run_out(self, key: str, fn: Any, c: oc.Case) -> None:
        import ember

        if c.outputs is None or len(c.outputs) != 1 or base._random(c) or key in NO_OUT:
            return
        want = np.asarray(c.outputs[0])
        if want.dtype.kind not in "biufc":
            return
        for shape in (want.shape, (0,)):
            o = ember.empty(*shape, dtype=ember.tensor(np.zeros(0, want.dtype)).dtype)
            tag = f"out={list(shape)}#{c.index} {c.dtype}"
            with ember.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = self._call(key, fn, oc.to_ember(c.inputs), {**oc.ember_value(c.kwargs), "out": o}, tag)
            if res is None:
                continue
            if res[0] is not o:
                self.flag(key, "forward", f"{tag}: the result is not out")
            self.compare_outputs(key, c, [o], tag)

    # --- integer, bool and half dtypes ------------------------------------------------------------------------
    def run_dtype(self, key: str, fn: Any, c: ow.WideCase) -> None:
        import ember

        inputs, kwargs = ow.to_ember(c.inputs), ow.to_ember(c.kwargs)
        tag = f"{c.dtype}#{c.index}"
        if c.outputs is None:
            try:
                with ember.no_grad():
                    fn(*inputs, **kwargs)
            except base.SweepTimeoutError:
                raise
            except Exception:
                return
            self.flag(key, "no-raise", f"{tag}: PyTorch raises ({(c.error or '')[:100]})")
            return
        with ember.no_grad():
            outs = self._call(key, fn, inputs, kwargs, tag)
        if outs is None:
            return
        if len(outs) != len(c.outputs):
            self.flag(key, "forward", f"{tag}: {len(outs)} outputs, PyTorch {len(c.outputs)}")
            return
        for k, (o, w, wd) in enumerate(zip(outs, c.outputs, c.out_dtypes or [], strict=False)):
            got_dt = str(o.dtype).replace("ember.", "") if isinstance(o, ember.Tensor) else type(o).__name__
            if got_dt != wd:
                self.flag(key, "forward", f"{tag} out{k}: dtype {got_dt} != {wd}")
                return
            if base._random(c):
                continue
            got, w = base._np(o), np.asarray(w)
            if got.shape != w.shape:
                self.flag(key, "forward", f"{tag} out{k}: shape {got.shape} != {w.shape}")
                return
            if w.dtype.kind not in "biufc":
                continue
            if k in TIES.get(c.name, ()):
                continue  # indices of tied values: either is right
            tol = HALF_TOL.get(wd, 0.0)
            scale = float(np.nanmax(np.abs(w), initial=0.0, where=np.isfinite(w))) if w.dtype.kind in "fc" else 0.0
            atol = max(tol * scale, tol)  # (tiny values: erfc(5) in float32 is 1.5e-12 give or take 1e-17)
            ok = np.allclose(got.astype(np.float64), w.astype(np.float64), rtol=tol, atol=atol, equal_nan=True)
            if not ok:
                bad = ~np.isclose(got.astype(np.float64), w.astype(np.float64), rtol=tol, atol=atol)
                self.flag(key, "forward", f"{tag} out{k}: values differ ({int(bad.sum())} of {w.size})")
                return

    def run_wide_safely(self, key: str, meta: oc.Meta, modes: set[str], cs: Any) -> None:
        """``run_wide``, an exception outside the operator calls flagged ``raises``."""
        try:
            self.run_wide(key, meta, modes, cs)
        except base.SweepTimeoutError:
            raise
        except Exception as e:
            self.flag(key, "raises", f"sweep: {type(e).__name__}: {str(e)[:150]}")

    def run_wide(self, key: str, meta: oc.Meta, modes: set[str], cs: Any) -> None:
        import ember

        fn = base._key_fns().get(key) or oc.ember_fn(meta.name)
        if fn is None:
            self.flag(key, "missing", f"no ember.{meta.name}")
            return
        plain = "." not in meta.name and not meta.name.startswith("__")
        out_ok = meta.name in ember.ops._out.OUT_OPS if hasattr(ember.ops, "_out") else False
        for c in cs["f"]:
            case = c.case() if isinstance(c, ow.WideCase) else c
            if "noncontig" in modes and case.dtype in ("float64", "float32"):
                self.run_noncontig(key, fn, case)
            if "gradgrad" in modes and isinstance(c, ow.WideCase):
                self.run_gradgrad(key, fn, c)
            if "inplace-view" in modes and plain and meta.inplace:
                self.run_inplace_view(key, meta.name, case)
            if "out" in modes and out_ok:
                self.run_out(key, fn, case)
        for c in cs["d"]:
            self.run_dtype(key, fn, c)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", default="noncontig", help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--out", default="opdb_sweep_wide.md", help="where the markdown table goes")
    ap.add_argument("--only", default="", help="comma-separated OpInfo keys")
    ap.add_argument("--five", action="store_true", help="the first five samples (opdb_sweep's cache), not all")
    ap.add_argument("--samples", type=int, default=10_000, help="the first N samples per dtype (a cache per N)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per OpInfo")
    args = ap.parse_args(argv)
    modes = set(args.mode.split(","))
    assert modes <= set(MODES), f"unknown mode in {modes}"

    t0 = time.time()
    _, errors, meta, keys = base.load(5)
    if args.five:
        floats: dict[str, Any] = base.load(5)[0]
    else:
        floats = ow.cases(("float64", "float32"), "f", base.EXCLUDE, max_samples=args.samples)
    others = ow.cases(OTHER_DTYPES, "d", base.EXCLUDE, max_samples=args.samples) if "dtypes" in modes else {}
    if args.only:
        keys = [k for k in keys if k in args.only.split(",")]
    print(f"{len(keys)} OpInfos, cases ready in {time.time() - t0:.0f} s", flush=True)
    sweep = Wide(10_000, 0)
    signal.signal(signal.SIGALRM, base._alarm)
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    for n, k in enumerate(keys):
        signal.alarm(args.timeout)
        try:
            if "all" in modes:
                cs = [c.case() if isinstance(c, ow.WideCase) else c for c in floats.get(k, [])]
                sweep.run_key_safely(k, cs, meta[k], errors.get(k, []))
            sweep.run_wide_safely(k, meta[k], modes, {"f": floats.get(k, []), "d": others.get(k, [])})
        except base.SweepTimeoutError:
            sweep.flag(k, "raises", f"timed out after {args.timeout} s")
        finally:
            signal.alarm(0)
        if n % 100 == 99:
            print(f"  {n + 1}/{len(keys)} ({time.time() - t0:.0f} s)", flush=True)
    summary = base._report(sweep, keys, args.out, time.time() - t0)
    print(summary)
    print(f"table: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
