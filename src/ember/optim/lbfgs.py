"""L-BFGS (``torch.optim.LBFGS``): limited-memory quasi-Newton steps over all parameters as one vector.

The algorithm follows PyTorch's step for step (the two-loop recursion, the first step's scaling, the
optional strong-Wolfe line search with cubic interpolation and its zoom phase, and the same stopping
tests), so that the same model, data and initial parameters give the same trajectory. Vectors are backend
arrays; scalars are Python floats.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..autograd._grad_mode import enable_grad, no_grad
from ._state import OptimizerState
from .optimizer import OptimizerAdaptor, SimpleOptimizer, _key

__all__ = ["LBFGS"]


class _LBFGSOptions(SimpleOptimizer):
    defaults = {  # noqa: RUF012 - read-only table of options
        "lr": 1.0,
        "max_iter": 20,
        "max_eval": None,
        "tolerance_grad": 1e-7,
        "tolerance_change": 1e-9,
        "history_size": 100,
        "line_search_fn": None,
    }


def _dot(be: Any, a: Any, b: Any) -> float:
    """The inner product of two flat vectors: the backend's ``dot`` (on NumPy one OpenBLAS thread)."""
    return float(be.dot(a, b))


def _cubic_interpolate(
    x1: float, f1: float, g1: float, x2: float, f2: float, g2: float, bounds: tuple[float, float] | None = None
) -> float:
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to ``bounds``."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = d2_square**0.5
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, lo), hi)


def _strong_wolfe(
    obj_func: Callable[[float], tuple[float, Any]],
    be: Any,
    t: float,
    d: Any,
    f: float,
    g: Any,
    gtd: float,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple[float, Any, float, int]:
    """A step ``t`` along ``d`` satisfying the strong Wolfe conditions: bracket, then zoom (Nocedal & Wright 3.5-3.6).

    Returns ``(loss, flat_grad, t, function_evaluations)`` at the chosen step.
    """
    xp = be.xp
    d_norm = float(xp.max(xp.abs(d)))
    f_new, g_new = obj_func(t)
    evals = 1
    gtd_new = _dot(be, g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    bracket: list[float] = []
    bracket_f: list[float] = []
    bracket_g: list[Any] = []
    bracket_gtd: list[float] = []
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f, bracket_g = [t_prev, t], [f_prev, f_new], [g_prev, g_new]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f, bracket_g = [t_prev, t], [f_prev, f_new], [g_prev, g_new]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        # extrapolate
        min_step, max_step = t + 0.01 * (t - t_prev), t * 10
        t_prev, t = t, _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        f_prev, g_prev, gtd_prev = f_new, g_new, gtd_new
        f_new, g_new = obj_func(t)
        evals += 1
        gtd_new = _dot(be, g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:  # reached the limit: bracket [0, t]
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]
    # zoom until the bracket is small enough or a point satisfies the conditions
    insuf_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # keep away from the bracket's ends unless progress stalls
        top, bottom = max(bracket), min(bracket)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:
            if insuf_progress or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(t)
        evals += 1
        gtd_new = _dot(be, g_new, d)
        ls_iter += 1
        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new, gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new, gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


class LBFGS(OptimizerAdaptor):
    """L-BFGS over all parameters (one group), with PyTorch's signature and algorithm.

    ``step(closure)`` needs a closure that zeroes the gradients, computes the loss, calls ``backward`` and
    returns the loss; it is called several times per step. ``line_search_fn="strong_wolfe"`` enables the
    line search; without it each iteration takes a fixed step ``lr``. The state (the curvature history)
    is saved by ``state_dict`` under the first parameter, as in PyTorch.
    """

    def __init__(
        self,
        params: Any,
        lr: float = 1.0,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        if not (isinstance(lr, (int, float)) and lr >= 0):
            raise ValueError(f"LBFGS: invalid learning rate {lr!r}")
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}")
        if int(max_iter) < 1 or int(history_size) < 1:
            raise ValueError(f"LBFGS: max_iter and history_size must be positive, got {max_iter}, {history_size}")
        super().__init__(
            _LBFGSOptions(), params, lr=lr, max_iter=int(max_iter),
            max_eval=int(max_eval) if max_eval is not None else int(max_iter) * 5 // 4,
            tolerance_grad=tolerance_grad, tolerance_change=tolerance_change, history_size=int(history_size),
            line_search_fn=line_search_fn,
        )  # fmt: skip
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params: list[Tensor] = self.param_groups[0]["params"]

    def add_param_group(self, group: dict[str, Any]) -> None:
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(group)

    # -- flat views of the parameters ----------------------------------------------------------------
    @property
    def _xp(self) -> Any:
        return self._params[0]._backend.xp

    def _gather_flat_grad(self) -> Any:
        xp = self._xp
        parts = []
        for p in self._params:
            g = p.grad
            parts.append(xp.zeros((p.numel(),), dtype=p._data.dtype) if g is None else xp.reshape(g._data, (-1,)))
        return xp.concatenate(parts)

    def _add_grad(self, step: float, update: Any) -> None:
        offset = 0
        for p in self._params:
            n = p.numel()
            p._data[...] += step * update[offset : offset + n].reshape(p._data.shape)
            p._vc[0] += 1
            offset += n

    def _clone_param(self) -> list[Any]:
        return [self._xp.copy(p._data) for p in self._params]

    def _set_param(self, values: list[Any]) -> None:
        for p, v in zip(self._params, values, strict=True):
            p._data[...] = v
            p._vc[0] += 1

    def _directional_evaluate(self, closure: Callable[[], Any], x: list[Any], t: float, d: Any) -> tuple[float, Any]:
        self._add_grad(t, d)
        with enable_grad():
            loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # -- the step ------------------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None, *, lr: float | None = None, grads: Any = None) -> Any:
        """Run up to ``max_iter`` L-BFGS iterations; returns the loss of the first closure call."""
        if closure is None:
            raise RuntimeError("LBFGS.step: a closure that re-evaluates the model and returns the loss is required")
        if grads is not None:
            raise TypeError("LBFGS.step: gradients come from the closure; grads= is not supported")
        group = self.param_groups[0]
        rate = group["lr"] if lr is None else lr
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history_size, line_search_fn = group["history_size"], group["line_search_fn"]
        be = self._params[0]._backend
        xp = be.xp
        state = self.state.setdefault(_key(self._params[0]), {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if float(xp.max(xp.abs(flat_grad))) <= tol_grad:
            return orig_loss

        d: Any = state.get("d")
        t: Any = state.get("t")
        old_dirs: Any = state.get("old_dirs")
        old_stps: Any = state.get("old_stps")
        ro: Any = state.get("ro")
        h_diag: Any = state.get("H_diag")
        prev_flat_grad: Any = state.get("prev_flat_grad")
        prev_loss: Any = state.get("prev_loss")

        with no_grad():
            n_iter = 0
            while n_iter < max_iter:
                n_iter += 1
                state["n_iter"] += 1
                if state["n_iter"] == 1:  # steepest descent first
                    d = -flat_grad
                    old_dirs, old_stps, ro, h_diag = [], [], [], 1.0
                else:
                    # update the curvature pairs when the curvature condition holds
                    y = flat_grad - prev_flat_grad
                    s = d * t
                    ys = _dot(be, y, s)
                    if ys > 1e-10:
                        if len(old_dirs) == history_size:
                            old_dirs.pop(0)
                            old_stps.pop(0)
                            ro.pop(0)
                        old_dirs.append(y)
                        old_stps.append(s)
                        ro.append(1.0 / ys)
                        h_diag = ys / _dot(be, y, y)
                    # two-loop recursion: d = -H grad, updating q and r in place (q and r are new arrays of this
                    # step): one temporary per update, not two. Not the backend's BLAS axpy: on NumPy at several
                    # threads it is OpenBLAS's threaded one, which stalled under load (py-spy, default threads)
                    al = [0.0] * len(old_dirs)
                    q = -flat_grad
                    for i in range(len(old_dirs) - 1, -1, -1):
                        al[i] = _dot(be, old_stps[i], q) * ro[i]
                        q -= al[i] * old_dirs[i]
                    r = q * h_diag
                    for i in range(len(old_dirs)):
                        be_i = _dot(be, old_dirs[i], r) * ro[i]
                        r += (al[i] - be_i) * old_stps[i]
                    d = r
                prev_flat_grad = xp.copy(flat_grad)
                prev_loss = loss
                # the step length: scaled down on the very first iteration
                t = min(1.0, 1.0 / float(xp.sum(xp.abs(flat_grad)))) * rate if state["n_iter"] == 1 else rate
                gtd = _dot(be, flat_grad, d)
                if gtd > -tol_change:  # not a descent direction
                    break
                ls_evals = 0
                if line_search_fn is not None:
                    x_init = self._clone_param()

                    def obj_func(step: float, x_init: list[Any] = x_init, d: Any = d) -> tuple[float, Any]:
                        return self._directional_evaluate(closure, x_init, step, d)

                    # the line search gets what is left of max_eval (PyTorch's bound since 2.x)
                    loss, flat_grad, t, ls_evals = _strong_wolfe(
                        obj_func, be, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals
                    )
                    self._add_grad(t, d)
                    opt_cond = float(xp.max(xp.abs(flat_grad))) <= tol_grad
                else:
                    self._add_grad(t, d)
                    opt_cond = False
                    if n_iter != max_iter:
                        with enable_grad():
                            loss = float(closure())
                        flat_grad = self._gather_flat_grad()
                        opt_cond = float(xp.max(xp.abs(flat_grad))) <= tol_grad
                        ls_evals = 1
                current_evals += ls_evals
                state["func_evals"] += ls_evals
                if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                    break
                if float(xp.max(xp.abs(d * t))) <= tol_change or abs(loss - prev_loss) < tol_change:
                    break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)  # fmt: skip
        return orig_loss

    # -- state: the history lists hold arrays ---------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        out = super().state_dict()
        be = self._params[0]._backend
        for k, s in self.state.items():
            saved = out["state"].get(k)
            if saved is None:
                continue
            for n in ("old_dirs", "old_stps"):
                if isinstance(s.get(n), list):
                    saved[n] = [Tensor._make(be.xp.copy(a), be) for a in s[n]]
            if isinstance(s.get("ro"), list):
                saved["ro"] = list(s["ro"])
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore options and the curvature history saved by ``state_dict``."""
        kind = state_dict.get("optimizer", type(self).__name__)
        if kind != type(self).__name__:
            raise ValueError(f"load_state_dict: the state was saved from {kind}, this optimizer is LBFGS")
        groups = state_dict["param_groups"]
        if len(groups) != 1 or len(groups[0]["params"]) != len(self._params):
            raise ValueError(
                f"load_state_dict: expected one group of {len(self._params)} params, got "
                f"{[len(g['params']) for g in groups]}"
            )
        self.param_groups[0].update({k: v for k, v in groups[0].items() if k != "params"})
        p0 = self._params[0]
        total = sum(p.numel() for p in self._params)

        def array(v: Any, name: str) -> Any:
            if not isinstance(v, Tensor):
                return v
            if v.shape not in ((total,), ()):
                raise ValueError(
                    f"load_state_dict: LBFGS state {name!r} has shape {tuple(v.shape)}, expected ({total},)"
                )
            return p0._backend.xp.copy(v.to(device=p0.device)._data)

        self.state = OptimizerState()
        for s in state_dict["state"].values():
            self.state[_key(p0)] = {
                n: [array(a, n) if isinstance(a, Tensor) else float(a) for a in v] if isinstance(v, list)
                else array(v, n)
                for n, v in s.items()
            }  # fmt: skip
