"""Torch's native kernels for the backend methods of ``_kernels_*.py`` (a mixin of the torch backend).

Every method takes and returns plain torch tensors and runs under ``torch.no_grad()``: torch's autograd is
never used, its backward kernels (``convolution_backward``, ``max_pool2d_with_indices_backward`` ...) are
called directly. Arguments and results match the reference kernels exactly (tested against them).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from .._kernels_loss import REDUCTIONS
from .._kernels_norm import params_dtype
from .._kernels_util import Ints, Pads
from .pool_kernels import max_pool2d_planes_last

F = TypeVar("F", bound=Callable[..., Any])


def _torch() -> Any:
    import torch

    return torch


def _boxed(name: str) -> Any:
    """``aten::<name>`` (its default overload) as a callable: torch's dispatcher entry for an operator handle,
    ``_dispatch_call_boxed(handle, *args)``, with the handle looked up once. The same kernels and bits as
    ``torch.ops.aten.<name>.default._op`` without its JIT argument matching (``tanh_backward`` on (8,) float32:
    ~1.09 µs against ~1.22 through ``_op``, thread CPU time, torch 2.13); ``_op`` where torch lacks the entry."""
    call = getattr(torch._C, "_dispatch_call_boxed", None)
    find = getattr(torch._C, "_dispatch_find_schema_or_throw", None)
    if call is None or find is None:
        return getattr(torch.ops.aten, name).default._op
    return functools.partial(call, find(f"aten::{name}", ""))


@functools.cache
def _aten(name: str) -> Any:
    """``aten::<name>``'s entry point (``_boxed``), looked up once: no packet overload resolution per call
    (``aten.convolution_backward(...)`` ~5 µs more, ``threshold_backward`` ~1 µs more, thread CPU time,
    torch 2.13). Kernels called through it on arrays that never require a gradient need no ``_no_grad``: torch
    records nothing for them."""
    return _boxed(name)


_grad_enabled, _set_grad = torch._C.is_grad_enabled, torch._C._set_grad_enabled  # (bound once: ~0.15 µs a call)


def _no_grad(fn: F) -> F:
    """``fn`` with torch's grad mode off (torch's own C switch: cheaper per call than ``with torch.no_grad()``)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        prev = _grad_enabled()
        _set_grad(False)
        try:
            return fn(*args, **kwargs)
        finally:
            _set_grad(prev)

    return wrapper  # type: ignore[return-value]


def _symmetric(pads: Pads) -> bool:
    return all(lo == hi for lo, hi in pads)


def _pad_input(x: Any, pads: Pads) -> Any:
    """``x`` with ``pads`` zeros added around its spatial dims (for uneven 'same' padding)."""
    flat = [v for lo_hi in reversed(pads) for v in lo_hi]
    return _torch().nn.functional.pad(x, flat)


def _crop(x: Any, pads: Pads, shape: Ints) -> Any:
    idx = (slice(None), slice(None)) + tuple(slice(lo, lo + n) for (lo, _), n in zip(pads, shape[2:], strict=True))
    return x[idx].contiguous()


def _as_2d(k: Ints, s: Ints, p: Ints, d: Ints) -> tuple[Ints, Ints, Ints, Ints]:
    """1-d pooling arguments as 2-d ones over a height of 1."""
    return (1, *k), (1, *s), (0, *p), (1, *d)


def _complex_bilinear(f: Any, a: Any, b: Any) -> Any:
    """``f(a, b)`` of complex arrays from four real calls of the bilinear ``f``: (ar + i ai)(br + i bi)."""
    torch = _torch()
    ar, ai = (a.real.contiguous(), a.imag.contiguous()) if a.is_complex() else (a, torch.zeros_like(a))
    br, bi = (b.real.contiguous(), b.imag.contiguous()) if b.is_complex() else (b, torch.zeros_like(b))
    return torch.complex(f(ar, br) - f(ai, bi), f(ar, bi) + f(ai, br))


class TorchKernels:
    """Native torch overrides of the reference kernels. Mix in before ``Backend`` (which supplies
    ``tdevice``, the torch device, ``native_dtype`` and the reference ``_sgd_step``)."""

    tdevice: Any
    native_dtype: Callable[[Any], Any]
    _sgd_step: Callable[..., Any]
    _gen_lock = threading.Lock()

    # -- random numbers, drawn on the device ---------------------------------------------------------
    def _draw(self, gen: Any, make: Callable[[Any], Any]) -> Any:
        """Run ``make(generator)`` with this device's torch generator, seeded from Ember's ``gen``: runs
        reproduce per backend (``ember.manual_seed``), and the numbers are made where they are used."""
        torch = _torch()
        seed = int(gen.integers(0, 2**63 - 1))
        with self._gen_lock:
            tg = self.__dict__.get("_tgen")
            if tg is None:
                tg = self.__dict__["_tgen"] = torch.Generator(device=self.tdevice)
            tg.manual_seed(seed)
            return make(tg)

    def uniform(self, gen: Any, shape: Ints, dtype: Any) -> Any:
        nd = self.native_dtype(dtype)
        return self._draw(gen, lambda g: _torch().rand(shape, generator=g, dtype=nd, device=self.tdevice))

    def normal(self, gen: Any, shape: Ints, dtype: Any) -> Any:
        nd = self.native_dtype(dtype)
        return self._draw(gen, lambda g: _torch().randn(shape, generator=g, dtype=nd, device=self.tdevice))

    def dropout_mask(self, gen: Any, shape: Ints, p: float, dtype: Any) -> Any:
        """``rand(shape, dtype) >= p`` on the device (the numbers ``ember.rand`` would draw)."""
        nd = self.native_dtype(dtype)
        return self._draw(gen, lambda g: _torch().rand(shape, generator=g, dtype=nd, device=self.tdevice) >= p)

    def randint(self, gen: Any, low: int, high: int, shape: Ints, dtype: Any) -> Any:
        nd = self.native_dtype(dtype)
        return self._draw(gen, lambda g: _torch().randint(low, high, shape, generator=g, dtype=nd, device=self.tdevice))

    def poisson(self, gen: Any, rate: Any) -> Any:
        return self._draw(gen, lambda g: _torch().poisson(rate, generator=g))

    def binomial(self, gen: Any, count: Any, prob: Any) -> Any:
        return self._draw(gen, lambda g: _torch().binomial(count, prob, generator=g))

    # -- convolution ---------------------------------------------------------------------------
    @_no_grad
    def conv(
        self,
        x: Any,
        w: Any,
        stride: Ints,
        pads: Pads,
        dilation: Ints,
        groups: int,
        save: bool = False,
        bias: Any = None,
    ) -> tuple[Any, Any]:
        torch = _torch()
        if x.is_complex() or w.is_complex():  # torch's CPU kernels are real-only
            y = _complex_bilinear(lambda a, b: self.conv(a, b, stride, pads, dilation, groups)[0], x, w)
            return (y if bias is None else y + bias.reshape(-1, *([1] * len(stride)))), None
        if not _symmetric(pads):
            x, pads = _pad_input(x, pads), tuple((0, 0) for _ in pads)
        sp = len(stride)
        p = [lo for lo, _ in pads]
        y = torch.convolution(x, w, bias, list(stride), p, list(dilation), False, [0] * sp, groups)
        return y.contiguous(), None

    @_no_grad
    def conv_backward(
        self,
        g: Any,
        x: Any,
        w: Any,
        saved: Any,
        stride: Ints,
        pads: Pads,
        dilation: Ints,
        groups: int,
        input_grad: bool = True,
        weight_grad: bool = True,
    ) -> tuple[Any, Any]:
        shape = tuple(x.shape)
        even = _symmetric(pads)
        if not even:
            x = _pad_input(x, pads)
        sp = len(stride)
        p = [lo for lo, _ in pads] if even else [0] * sp
        gx, gw, _ = _aten("convolution_backward")(
            g.contiguous(), x, w, None, list(stride), p, list(dilation), False, [0] * sp, groups,
            [input_grad, weight_grad, False],
        )  # fmt: skip
        if gx is not None:
            gx = gx.contiguous() if even else _crop(gx, pads, shape)
        return gx, (gw.contiguous() if gw is not None else None)

    @_no_grad
    def conv_transpose(
        self, y: Any, w: Any, stride: Ints, pads: Pads, dilation: Ints, groups: int, x_shape: Ints
    ) -> Any:
        if y.is_complex() or w.is_complex():
            return _complex_bilinear(
                lambda a, b: self.conv_transpose(a, b, stride, pads, dilation, groups, x_shape), y, w
            )
        torch = _torch()
        even = _symmetric(pads)
        k = w.shape[2:]
        sp = len(stride)
        p = [lo for lo, _ in pads] if even else [0] * sp
        target = [x_shape[2 + i] + (0 if even else pads[i][0] + pads[i][1]) for i in range(sp)]
        full = [(y.shape[2 + i] - 1) * stride[i] - 2 * p[i] + dilation[i] * (k[i] - 1) + 1 for i in range(sp)]
        extra = [target[i] - full[i] for i in range(sp)]  # output_padding: less than the stride
        gx = torch.convolution(y, w, None, list(stride), p, list(dilation), True, extra, groups)
        return gx.contiguous() if even else _crop(gx, pads, x_shape)

    @_no_grad
    def conv_weight(
        self, x: Any, g: Any, stride: Ints, pads: Pads, dilation: Ints, groups: int, w_shape: Ints, saved: Any = None
    ) -> Any:
        if x.is_complex() or g.is_complex():
            return _complex_bilinear(lambda a, b: self.conv_weight(a, b, stride, pads, dilation, groups, w_shape), x, g)
        w = _torch().empty(w_shape, dtype=x.dtype, device=x.device)  # only its shape is read
        return self.conv_backward(g, x, w, None, stride, pads, dilation, groups, False, True)[1]

    # -- unfold / fold (PyTorch has them for 4-d inputs) ------------------------------------------
    @_no_grad
    def unfold(self, x: Any, k: Ints, stride: Ints, pads: Pads, dilation: Ints) -> Any:
        if len(k) != 2:
            return super().unfold(x, k, stride, pads, dilation)  # type: ignore[misc]
        if not _symmetric(pads):
            x, pads = _pad_input(x, pads), ((0, 0), (0, 0))
        p = tuple(lo for lo, _ in pads)
        return _torch().nn.functional.unfold(x, k, dilation, p, stride).contiguous()

    @_no_grad
    def fold(self, cols: Any, shape: Ints, k: Ints, stride: Ints, pads: Pads, dilation: Ints) -> Any:
        if len(k) != 2 or not _symmetric(pads):
            return super().fold(cols, shape, k, stride, pads, dilation)  # type: ignore[misc]
        p = tuple(lo for lo, _ in pads)
        return _torch().nn.functional.fold(cols, tuple(shape[2:]), k, dilation, p, stride).contiguous()

    # -- pooling ---------------------------------------------------------------------------------
    @_no_grad
    def max_pool(
        self, x: Any, k: Ints, s: Ints, p: Ints, d: Ints, ceil_mode: bool, save: bool = False
    ) -> tuple[Any, Any]:
        planes = max_pool2d_planes_last(_aten("max_pool2d_with_indices"), x, k, s, p, d, ceil_mode, save)
        if planes is not None or save:  # (2-d where it pays: a channels-last kernel over the planes, pool_kernels.py)
            return planes or self._max_pool_with_indices(x, k, s, p, d, ceil_mode)
        fn = (_torch().max_pool1d, _torch().max_pool2d, _torch().max_pool3d)[len(k) - 1]  # (values only: faster)
        return fn(x, k, s, p, d, ceil_mode).contiguous(), None

    def _max_pool_with_indices(self, x: Any, k: Ints, s: Ints, p: Ints, d: Ints, ceil_mode: bool) -> tuple[Any, Any]:
        planes = max_pool2d_planes_last(_aten("max_pool2d_with_indices"), x, k, s, p, d, ceil_mode, True)
        if planes is not None:
            return planes
        if len(k) == 1:
            y, idx = _aten("max_pool2d_with_indices")(x.unsqueeze(2), *_as_2d(k, s, p, d), ceil_mode)
            return y.squeeze(2).contiguous(), idx.squeeze(2).contiguous()
        fn = _aten("max_pool2d_with_indices") if len(k) == 2 else _aten("max_pool3d_with_indices")
        y, idx = fn(x, k, s, p, d, ceil_mode)
        return y.contiguous(), idx.contiguous()

    @_no_grad
    def max_pool_backward(
        self, g: Any, x: Any, y: Any, saved: Any, k: Ints, s: Ints, p: Ints, d: Ints, ceil_mode: bool
    ) -> Any:
        idx = saved if saved is not None else self._max_pool_with_indices(x, k, s, p, d, ceil_mode)[1]
        if len(k) == 1:
            gx = _aten("max_pool2d_with_indices_backward")(
                g.unsqueeze(2), x.unsqueeze(2), *_as_2d(k, s, p, d), ceil_mode, idx.unsqueeze(2)
            )
            return gx.squeeze(2).contiguous()
        fn = _aten("max_pool2d_with_indices_backward") if len(k) == 2 else _aten("max_pool3d_with_indices_backward")
        return fn(g.contiguous(), x, k, s, p, d, ceil_mode, idx).contiguous()

    @_no_grad
    def max_pool_indices(self, x: Any, y: Any, saved: Any, k: Ints, s: Ints, p: Ints, d: Ints, ceil_mode: bool) -> Any:
        return saved if saved is not None else self._max_pool_with_indices(x, k, s, p, d, ceil_mode)[1]

    @_no_grad
    def avg_pool(
        self, x: Any, k: Ints, s: Ints, p: Ints, ceil_mode: bool, count_include_pad: bool, divisor_override: Any
    ) -> Any:
        div = int(divisor_override) if divisor_override else None
        if len(k) == 1:
            k2, s2, p2, _ = _as_2d(k, s, p, (1,))
            return (
                _aten("avg_pool2d")(x.unsqueeze(2), k2, s2, p2, ceil_mode, count_include_pad, div)
                .squeeze(2)
                .contiguous()
            )
        fn = _aten("avg_pool2d") if len(k) == 2 else _aten("avg_pool3d")
        return fn(x, k, s, p, ceil_mode, count_include_pad, div).contiguous()

    @_no_grad
    def avg_pool_backward(
        self,
        g: Any,
        x_shape: Ints,
        k: Ints,
        s: Ints,
        p: Ints,
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Any,
    ) -> Any:
        torch = _torch()
        div = int(divisor_override) if divisor_override else None
        x = torch.empty(x_shape, dtype=g.dtype, device=g.device)  # only its shape is read
        if len(k) == 1:
            k2, s2, p2, _ = _as_2d(k, s, p, (1,))
            gx = _aten("avg_pool2d_backward")(
                g.unsqueeze(2), x.unsqueeze(2), k2, s2, p2, ceil_mode, count_include_pad, div
            )
            return gx.squeeze(2).contiguous()
        fn = _aten("avg_pool2d_backward") if len(k) == 2 else _aten("avg_pool3d_backward")
        return fn(g.contiguous(), x, k, s, p, ceil_mode, count_include_pad, div).contiguous()

    # -- normalisation ---------------------------------------------------------------------------
    @_no_grad
    def batch_norm_eval(self, x: Any, mean: Any, var: Any, weight: Any, bias: Any, eps: float) -> Any:
        return _torch().batch_norm(x, weight, bias, mean, var, False, 0.0, eps, False)

    @_no_grad
    def batch_norm_train(
        self, x: Any, weight: Any, bias: Any, eps: float, running: tuple[Any, Any, float] | None = None
    ) -> tuple[Any, Any, Any, Any]:
        # (float16/bfloat16 x with float32 parameters: PyTorch's mixed-precision kernel, the output in x's dtype)
        pdt = params_dtype(x, weight, bias, running)
        if running is not None:  # the kernel updates the running statistics itself (no extra launches)
            rm, rv, momentum = running
            y, mean, invstd = _aten("native_batch_norm")(x, weight, bias, rm, rv, True, momentum, eps)
            return y, mean, None, (x, mean, invstd, eps, pdt)
        y, mean, invstd = _aten("native_batch_norm")(x, weight, bias, None, None, True, 0.0, eps)
        return y, mean, invstd.pow(-2) - eps, (x, mean, invstd, eps, pdt)

    @_no_grad
    def batch_norm_train_backward(
        self, g: Any, saved: Any, weight: Any, need_x: bool, need_w: bool, need_b: bool
    ) -> tuple[Any, Any, Any]:
        x, mean, invstd, eps, param_dtype = saved
        need_w = need_w and weight is not None
        if weight is None:  # CUDA's kernel returns an empty bias gradient without a weight: pass ones (the same)
            weight = _torch().ones(x.shape[1], dtype=param_dtype, device=x.device)
        gx, gw, gb = _aten("native_batch_norm_backward")(
            g, x, weight, None, None, mean, invstd, True, eps, [need_x, need_w, need_b]
        )
        return gx, (gw if need_w else None), (gb if need_b else None)

    # -- activations -----------------------------------------------------------------------------
    # torch's C entry points themselves as these methods (``staticmethod``: no Python frame between the caller and
    # torch, ~0.1 µs a call; ``torch.sigmoid``'s parsed binding costs ~0.3 µs less than aten's boxed ``_op``).
    #: ``sigmoid(x)``: PyTorch's kernel (one pass, PyTorch's bits) where the reference made five calls (two
    #: negations, a scalar tensor for logaddexp's 0, exp)
    sigmoid = staticmethod(torch.sigmoid)
    #: ``tanh_backward(g, y)``: PyTorch's own backward of tanh, one kernel where ``g * (1 - y * y)`` made three
    tanh_backward = staticmethod(_boxed("tanh_backward"))
    #: ``sigmoid_backward(g, y)``
    sigmoid_backward = staticmethod(_boxed("sigmoid_backward"))

    @_no_grad
    def relu_backward(self, g: Any, y: Any) -> Any:
        # one pass; ``g * (y > 0)`` costs ~8x as much in torch (a bool temporary, then a mixed-dtype multiply)
        return _aten("threshold_backward")(g, y, 0)

    @_no_grad
    def log_softmax(self, x: Any, dim: int) -> Any:
        # one fused pass; torch.exp of scores far below the maximum (large logits) takes a slow path (~15x)
        return _aten("_log_softmax")(x, dim, False)

    @_no_grad
    def log_softmax_backward(self, g: Any, y: Any, dim: int) -> Any:
        return _aten("_log_softmax_backward_data")(g, y, dim, y.dtype)

    # -- losses ----------------------------------------------------------------------------------
    @_no_grad
    def nll_loss(self, logp: Any, target: Any, weight: Any, reduction: str, ignore_index: int) -> tuple[Any, Any]:
        # PyTorch's own pair: one kernel each way where Ember's operators made about a dozen launches
        return _aten("nll_loss_forward")(logp, target, weight, REDUCTIONS[reduction], ignore_index)

    @_no_grad
    def nll_loss_backward(
        self, g: Any, logp: Any, target: Any, weight: Any, reduction: str, ignore_index: int, total_weight: Any
    ) -> Any:
        return _aten("nll_loss_backward")(g, logp, target, weight, REDUCTIONS[reduction], ignore_index, total_weight)

    @_no_grad
    def gelu(self, x: Any, approximate: str = "none", keep: bool = False) -> tuple[Any, Any]:
        return _aten("gelu")(x, approximate=approximate), None  # backward reads x only

    @_no_grad
    def gelu_backward(self, g: Any, x: Any, approximate: str = "none", saved: Any = None) -> Any:
        return _aten("gelu_backward")(g, x, approximate=approximate)

    # -- optimizer updates -----------------------------------------------------------------------
    def axpy(self, y: Any, a: float, x: Any) -> None:
        y.add_(x, alpha=a)

    def scal(self, y: Any, a: float) -> None:
        y.mul_(a)

    def sgd_step(
        self, p: Any, g: Any, buf: Any, lr: float, weight_decay: float, momentum: float, dampening: float,
        nesterov: bool,
    ) -> Any:  # fmt: skip
        return self.sgd_step_many([p], [g], [buf], lr, weight_decay, momentum, dampening, nesterov)[0]

    def adam_step(
        self, p: Any, g: Any, m: Any, v: Any, max_v: Any, tmp: Any, step: int, lr: float, beta1: float, beta2: float,
        eps: float, weight_decay: float, decoupled: bool,
    ) -> None:  # fmt: skip
        self.adam_step_many([p], [g], [m], [v], [max_v], [step], lr, beta1, beta2, eps, weight_decay, decoupled)

    @_no_grad
    def sgd_step_many(
        self,
        ps: list[Any],
        gs: list[Any],
        bufs: list[Any],
        lr: float,
        weight_decay: float,
        momentum: float,
        dampening: float,
        nesterov: bool,
    ) -> list[Any]:
        """``sgd_step`` over many parameters: one fused multi-tensor kernel per dtype (and first step or not)."""
        torch = _torch()
        gs = _like_params(ps, gs)
        out = list(bufs)
        # (no fused kernel for these; nor for float16/bfloat16 on the CPU: torch 2.13's ``_fused_sgd_`` leaves their
        # vectorised part unchanged there, every element of a 16-element block: tests/bf16/test_bf16_train.py)
        mixed = [g.dtype != p.dtype or (b is not None and b.dtype != p.dtype) or p.is_complex()
                 or (p.dtype in (torch.float16, torch.bfloat16) and p.device.type == "cpu")
                 for p, g, b in zip(ps, gs, bufs)]  # fmt: skip
        for (_, first), idx in _groups(ps, [momentum != 0 and b is None for b in bufs], skip=mixed).items():
            if first:
                for i in idx:
                    out[i] = torch.empty_like(ps[i])
            torch._fused_sgd_(
                [ps[i] for i in idx], [gs[i] for i in idx], [out[i] for i in idx] if momentum else [],
                weight_decay=weight_decay, momentum=momentum, lr=lr, dampening=dampening, nesterov=nesterov,
                maximize=False, is_first_step=first,
            )  # fmt: skip
        for i in (i for i, m in enumerate(mixed) if m):  # (a model converted after its first steps, or complex)
            out[i] = self._sgd_step(  # (the reference rule; this axpy/scal are PyTorch's add_/mul_)
                ps[i], gs[i], bufs[i], lr, weight_decay, momentum, dampening, nesterov, self.axpy, self.scal
            )
        return out

    @_no_grad
    def adam_step_many(
        self,
        ps: list[Any],
        gs: list[Any],
        ms: list[Any],
        vs: list[Any],
        max_vs: list[Any],
        steps: list[int],
        lr: float,
        beta1: float,
        beta2: float,
        eps: float,
        weight_decay: float,
        decoupled: bool,
    ) -> None:
        """``adam_step`` over many parameters: one fused multi-tensor kernel per dtype, step and amsgrad."""
        torch = _torch()
        gs = _like_params(ps, gs)
        fused = torch._fused_adamw_ if decoupled else torch._fused_adam_
        keys = [(s, mv is not None) for s, mv in zip(steps, max_vs, strict=True)]
        for (_, (step, ams)), idx in _groups(ps, keys).items():
            # one step count for the whole group (read only; a tensor already while a CUDA graph captures the step)
            t = step if isinstance(step, torch.Tensor) else _step_tensor(step, ps[idx[0]].device)
            fused(
                [ps[i] for i in idx], [gs[i] for i in idx], [ms[i] for i in idx], [vs[i] for i in idx],
                [max_vs[i] for i in idx] if ams else [], [t] * len(idx), lr=lr, beta1=beta1, beta2=beta2,
                weight_decay=weight_decay, eps=eps, amsgrad=ams, maximize=False,
            )  # fmt: skip


def _like_params(ps: list[Any], gs: list[Any]) -> list[Any]:
    """Each gradient in its parameter's memory layout: the fused kernels walk both as flat memory, so a contiguous
    gradient of a transposed (non-contiguous) parameter would land on the wrong elements."""
    return [g if g.stride() == p.stride() else _torch().empty_like(p).copy_(g) for p, g in zip(ps, gs, strict=True)]


def _step_tensor(step: int, device: Any) -> Any:
    """Adam's step count as the float32 tensor the fused kernels read, made on ``device`` by a fill (a host
    tensor copied to a GPU would wait for the GPU's queue to drain)."""
    torch = _torch()
    return torch.full((), float(step), dtype=torch.float32, device=device)


def _groups(arrays: list[Any], keys: list[Any], skip: list[bool] | None = None) -> dict[tuple[Any, Any], list[int]]:
    """Indices of ``arrays`` grouped by (dtype, key), in order: the calls one multi-tensor kernel can take (those
    marked in ``skip`` left out)."""
    out: dict[tuple[Any, Any], list[int]] = {}
    for i, (a, k) in enumerate(zip(arrays, keys, strict=True)):
        if skip is None or not skip[i]:
            out.setdefault((a.dtype, k), []).append(i)
    return out
