"""The export op table: Ember operator class name -> emitter writing it as ONNX node(s).

An emitter takes the graph builder ``g`` and the traced ``call`` (the operator's own arguments and
outputs) and returns the names of the outputs it wrote. Operators with arguments the ONNX form cannot
express raise ``ExportError`` naming the operator and the argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._tensor import Tensor
from ._dtypes import onnx_type
from ._export import ExportError, GraphBuilder, host
from ._trace import Call

__all__ = ["EMITTERS"]

Emitter = Callable[[GraphBuilder, Call], list[str]]


def _x(call: Call) -> Tensor:
    return next(a for a in call.args if isinstance(a, Tensor))


def _unary(op: str, **attrs: Any) -> Emitter:
    return lambda g, c: g.node(op, [g.value(c.args[0])], **attrs)


def _binary(op: str) -> Emitter:
    def emit(g: GraphBuilder, c: Call) -> list[str]:
        a, b = c.args[:2]
        like = c.outputs[0] if c.outputs[0].dtype.kind != "b" else (a if isinstance(a, Tensor) else b)
        return g.node(op, [g.value(a, like), g.value(b, like)])

    return emit


def _chain(*ops: str) -> Emitter:
    def emit(g: GraphBuilder, c: Call) -> list[str]:
        name = g.value(c.args[0])
        for op in ops:
            (name,) = g.node(op, [name])
        return [name]

    return emit


def _scalar_op(g: GraphBuilder, op: str, x: str, value: float, like: Tensor) -> str:
    return g.node(op, [x, g.value(float(value), like)])[0]


def _gelu(g: GraphBuilder, c: Call) -> list[str]:
    x = c.args[0]
    if g.opset >= 20:
        return g.node("Gelu", [g.value(x)])
    xn = g.value(x)
    e = g.node("Erf", [_scalar_op(g, "Div", xn, 2**0.5, x)])[0]
    return g.node("Mul", [_scalar_op(g, "Mul", xn, 0.5, x), _scalar_op(g, "Add", e, 1.0, x)])


def _gelu_tanh(g: GraphBuilder, c: Call) -> list[str]:
    x = c.args[0]
    if g.opset >= 20:
        return g.node("Gelu", [g.value(x)], approximate="tanh")
    xn = g.value(x)
    cube = g.node("Mul", [xn, g.node("Mul", [xn, xn])[0]])[0]
    inner = g.node("Add", [xn, _scalar_op(g, "Mul", cube, 0.044715, x)])[0]
    t = g.node("Tanh", [_scalar_op(g, "Mul", inner, (2 / np.pi) ** 0.5, x)])[0]
    return g.node("Mul", [_scalar_op(g, "Mul", xn, 0.5, x), _scalar_op(g, "Add", t, 1.0, x)])


def _silu(g: GraphBuilder, c: Call) -> list[str]:
    xn = g.value(c.args[0])
    return g.node("Mul", [xn, g.node("Sigmoid", [xn])[0]])


def _softplus(g: GraphBuilder, c: Call) -> list[str]:
    x, beta = c.args[0], c.args[1] if len(c.args) > 1 else 1.0
    xn = g.value(x)
    if beta == 1.0:
        return g.node("Softplus", [xn])
    sp = g.node("Softplus", [_scalar_op(g, "Mul", xn, beta, x)])[0]
    return [_scalar_op(g, "Div", sp, beta, x)]


def _elu(g: GraphBuilder, c: Call) -> list[str]:
    x, alpha, scale = c.args[0], c.args[1], c.args[2] if len(c.args) > 2 else 1.0
    out = g.node("Elu", [g.value(x)], alpha=float(alpha))[0]
    return [out] if scale == 1.0 else [_scalar_op(g, "Mul", out, scale, x)]


def _shrink(g: GraphBuilder, c: Call) -> list[str]:
    x, lambd, soft = c.args[:3]
    return g.node("Shrink", [g.value(x)], lambd=float(lambd), bias=float(lambd) if soft else 0.0)


def _clamp(g: GraphBuilder, c: Call) -> list[str]:
    x, lo, hi = c.args[:3]
    return g.node(
        "Clip", [g.value(x), g.value(lo, x) if lo is not None else "", g.value(hi, x) if hi is not None else ""]
    )


def _where(g: GraphBuilder, c: Call) -> list[str]:
    cond, a, b = c.args[:3]
    like = c.outputs[0]
    return g.node("Where", [g.value(cond), g.value(a, like), g.value(b, like)])


def _cast(g: GraphBuilder, c: Call) -> list[str]:
    return g.node("Cast", [g.value(c.args[0])], to=onnx_type(c.outputs[0].dtype))


def _reshape(g: GraphBuilder, c: Call) -> list[str]:
    x, out = c.args[0], c.outputs[0]
    target = list(out.shape)
    dyn_out = g.dyn(out)
    if dyn_out:
        dyn_in = g.dyn(x)
        spec = []
        for d, s in enumerate(target):
            if d not in dyn_out:
                spec.append(s)
            elif d in dyn_in and d < x.ndim and x.shape[d] == s:
                spec.append(0)  # copy the input's (dynamic) dim
            else:
                spec.append(-1)
        if spec.count(-1) > 1 or (0 in target and not all(s != 0 for s in target)):
            raise ExportError(f"Reshape {tuple(x.shape)} -> {tuple(target)}: more than one dim depends on a dynamic "
                              "axis; reshape with -1 or keep that axis where it is")  # fmt: skip
        target = spec
    return g.node("Reshape", [g.value(x), g.ints(target)])


def _expand(g: GraphBuilder, c: Call) -> list[str]:
    x, out = c.args[0], c.outputs[0]
    shape = [1 if d in g.dyn(out) else s for d, s in enumerate(out.shape)]
    return g.node("Expand", [g.value(x), g.ints(shape)])


def _permute(g: GraphBuilder, c: Call) -> list[str]:
    return g.node("Transpose", [g.value(c.args[0])], perm=[int(d) for d in c.args[1]])


def _cat(g: GraphBuilder, c: Call) -> list[str]:
    xs = [a for a in c.args if isinstance(a, Tensor) or hasattr(a, "shape")]
    return g.node("Concat", [g.value(a) for a in xs], axis=int(c.kwargs["dim"]))


def _assign(g: GraphBuilder, c: Call) -> list[str]:
    """An in-place write into a whole tensor (``relu_``, ``x += y``, ``copy_``): later uses of the tensor read
    its new value. A write into part of one, or through a view, has no ONNX form here: refused, never dropped."""
    t, value = c.args
    if c.kwargs["view"] or c.kwargs["index"] is not None:
        where = "a view of a tensor" if c.kwargs["view"] else f"part of a tensor (t[{c.kwargs['index']!r}] = ...)"
        raise ExportError(f"ember.onnx.export: an in-place write into {where} has no ONNX form yet; write it out "
                          "of place (where, cat, an out-of-place operator)")  # fmt: skip
    name = g.value(value, like=t)
    if isinstance(value, Tensor) and value.dtype != t.dtype:
        name = g.node("Cast", [name], to=onnx_type(t.dtype))[0]
    if not isinstance(value, Tensor) or tuple(value.shape) != tuple(t.shape):  # (t's shape read in the graph:
        name = g.node("Expand", [name, g.node("Shape", [g.value(t)])[0]])[0]  # a dynamic axis stays dynamic)
    g.bind(t, name)
    return []


def _stack(g: GraphBuilder, c: Call) -> list[str]:
    d = int(c.kwargs["dim"])
    xs = [a for a in c.args if isinstance(a, Tensor) or hasattr(a, "shape")]
    return g.node("Concat", [g.node("Unsqueeze", [g.value(a), g.ints([d])])[0] for a in xs], axis=d)


def _split(g: GraphBuilder, c: Call) -> list[str]:
    x, sizes, dim = c.args[:3]
    if dim % x.ndim in g.dyn(x):
        raise ExportError(f"Split of {tuple(x.shape)} along dim {dim}, a dynamic axis")
    return g.node("Split", [g.value(x), g.ints(sizes)], n_out=len(sizes), axis=int(dim))


def _axes_node(g: GraphBuilder, op: str, x: Any, axes: Any, keep: bool, since: int) -> list[str]:
    axes = [int(a) for a in (axes if axes is not None else range(x.ndim))]
    if g.opset >= since:
        return g.node(op, [g.value(x), g.ints(axes)], keepdims=int(keep))
    return g.node(op, [g.value(x)], axes=axes, keepdims=int(keep))


def _sum(g: GraphBuilder, c: Call) -> list[str]:
    return _axes_node(g, "ReduceSum", c.args[0], c.args[1], bool(c.args[2]), 13)


def _mean(g: GraphBuilder, c: Call) -> list[str]:
    return _axes_node(g, "ReduceMean", c.args[0], c.args[1], bool(c.args[2]), 18)


def _amax(g: GraphBuilder, c: Call) -> list[str]:
    return _axes_node(g, "ReduceMin" if c.args[3] else "ReduceMax", c.args[0], c.args[1], bool(c.args[2]), 18)


def _norm2(g: GraphBuilder, c: Call) -> list[str]:
    return _axes_node(g, "ReduceL2", c.args[0], c.args[1], bool(c.args[2]), 18)


def _arg(g: GraphBuilder, c: Call) -> list[str]:
    x, dim, keep, use_min = c.args[:4]
    xn = g.value(x)
    if dim is None:
        xn, dim = g.node("Reshape", [xn, g.ints([-1])])[0], 0
    return g.node("ArgMin" if use_min else "ArgMax", [xn], axis=int(dim), keepdims=int(keep))


def _max_dim(g: GraphBuilder, c: Call) -> list[str]:
    x, dim, keep, use_min = c.args[:4]
    values = _axes_node(g, "ReduceMin" if use_min else "ReduceMax", x, [dim], keep, 18)
    return values + g.node("ArgMin" if use_min else "ArgMax", [g.value(x)], axis=int(dim), keepdims=int(keep))


def _linear(g: GraphBuilder, c: Call) -> list[str]:
    x, w = c.args[:2]
    b = c.args[2] if len(c.args) > 2 else None
    if x.ndim == 2:
        return g.node("Gemm", [g.value(x), g.value(w)] + ([g.value(b)] if b is not None else []), transB=1)
    y = g.node("MatMul", [g.value(x), g.node("Transpose", [g.value(w)], perm=[1, 0])[0]])
    return g.node("Add", [y[0], g.value(b)]) if b is not None else y


def _conv(g: GraphBuilder, c: Call) -> list[str]:
    x, w, b, cfg = c.args[:4]
    s, pads, d, groups = cfg[:4]
    pads = [int(p[0]) for p in pads] + [int(p[1]) for p in pads]
    ins = [g.value(x), g.value(w)] + ([g.value(b)] if b is not None else [])
    return g.node("Conv", ins, strides=list(s), pads=pads, dilations=list(d), group=int(groups),
                  kernel_shape=list(w.shape[2:]))  # fmt: skip


def _conv_t(g: GraphBuilder, c: Call) -> list[str]:
    y, w, cfg = c.args[:3]
    s, pads, d, groups, x_shape = cfg[:5]
    k = list(w.shape[2:])
    lo, hi = [int(p[0]) for p in pads], [int(p[1]) for p in pads]
    full = [(y.shape[2 + i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - lo[i] - hi[i] for i in range(len(k))]
    out_pad = [int(x_shape[2 + i]) - full[i] for i in range(len(k))]
    return g.node("ConvTranspose", [g.value(y), g.value(w)], strides=list(s), pads=lo + hi, dilations=list(d),
                  group=int(groups), output_padding=out_pad, kernel_shape=k)  # fmt: skip


def _max_pool(g: GraphBuilder, c: Call) -> list[str]:
    k, s, p, d, ceil = c.args[1][:5]
    return g.node("MaxPool", [g.value(c.args[0])], kernel_shape=list(k), strides=list(s), pads=list(p) + list(p),
                  dilations=list(d), ceil_mode=int(ceil))  # fmt: skip


def _avg_pool(g: GraphBuilder, c: Call) -> list[str]:
    k, s, p, ceil, include, divisor = c.args[1][:6]
    if divisor:
        raise ExportError("AvgPool with divisor_override has no ONNX form")
    return g.node("AveragePool", [g.value(c.args[0])], kernel_shape=list(k), strides=list(s),
                  pads=list(p) + list(p), ceil_mode=int(ceil), count_include_pad=int(include))  # fmt: skip


def _batch_norm(g: GraphBuilder, c: Call) -> list[str]:
    x, mean, var, w, b, eps = c.args[:6]
    shape = [x.shape[1]]
    dt = mean.detach().cpu().numpy().dtype  # (the parameters' dtype: float32 with a float16 x in mixed precision)
    wn = g.value(w) if w is not None else g.const(np.ones(shape, dt))
    bn = g.value(b) if b is not None else g.const(np.zeros(shape, dt))
    return g.node("BatchNormalization", [g.value(x), wn, bn, g.value(mean), g.value(var)], epsilon=float(eps))


def _standardize(g: GraphBuilder, c: Call) -> list[str]:
    x, axes, eps = c.args[:3]
    axes = sorted(int(a) % x.ndim for a in axes)
    if axes != list(range(axes[0], x.ndim)):
        raise ExportError(f"Standardize over dims {axes} of {tuple(x.shape)}: only trailing dims have an ONNX form")
    shape = list(x.shape[axes[0] :])
    dt = x.detach().cpu().numpy().dtype
    ones, zeros = g.const(np.ones(shape, dt), hint="ln_scale"), g.const(np.zeros(shape, dt), hint="ln_bias")
    return g.node("LayerNormalization", [g.value(x), ones, zeros], axis=axes[0], epsilon=float(eps))


def _layer_norm(g: GraphBuilder, c: Call) -> list[str]:
    x, w, b, ns, eps = c.args[:5]
    dt = x.detach().cpu().numpy().dtype
    wn = g.value(w) if w is not None else g.const(np.ones(ns, dt), hint="ln_scale")
    bn = g.value(b) if b is not None else g.const(np.zeros(ns, dt), hint="ln_bias")
    return g.node("LayerNormalization", [g.value(x), wn, bn], axis=x.ndim - len(ns), epsilon=float(eps))


def _attention(g: GraphBuilder, c: Call) -> list[str]:
    """``softmax(q k^T * scale + mask) v`` as MatMul, Mul, Add, Softmax, MatMul (every opset)."""
    q, k, v, mask, keep, causal, scale = c.args[:7]
    if keep is not None:
        raise ExportError("scaled_dot_product_attention with dropout has no ONNX form: export in eval mode")
    dt = q.detach().cpu().numpy().dtype
    perm = list(range(k.ndim - 2)) + [k.ndim - 1, k.ndim - 2]
    (kt,) = g.node("Transpose", [g.value(k)], perm=perm)
    (s,) = g.node("MatMul", [g.value(q), kt])
    s = _scalar_op(g, "Mul", s, scale, q)
    if mask is not None:
        m = g.value(mask)
        if mask.dtype.kind == "b":
            (m,) = g.node("Where", [m, g.const(np.zeros((), dt)), g.const(np.array(-np.inf, dt))])
        (s,) = g.node("Add", [s, m])
    if causal:
        tri = np.where(np.tril(np.ones((q.shape[-2], k.shape[-2]), dtype=bool)), 0.0, -np.inf).astype(dt)
        (s,) = g.node("Add", [s, g.const(tri, hint="causal_mask")])
    (p,) = g.node("Softmax", [s], axis=-1)
    return g.node("MatMul", [p, g.value(v)])


def _dropout_add(g: GraphBuilder, c: Call) -> list[str]:
    x, z, keep = c.args[:3]
    if keep is not None:
        raise ExportError("dropout while training has no ONNX form: export in eval mode")
    return g.node("Add", [g.value(x), g.value(z)])


def _embedding(g: GraphBuilder, c: Call) -> list[str]:
    w, idx = c.args[:2]
    return g.node("Gather", [g.value(w), g.value(idx)], axis=0)


def _tri(g: GraphBuilder, c: Call) -> list[str]:
    x, k, upper = c.args[:3]
    return g.node("Trilu", [g.value(x), g.const(np.int64(k))], upper=int(upper))


def _einsum(g: GraphBuilder, c: Call) -> list[str]:
    xs = [a for a in c.args if isinstance(a, Tensor) or hasattr(a, "shape")]
    eq = ",".join(c.kwargs["subs"]) + "->" + c.kwargs["out"]
    return g.node("Einsum", [g.value(a) for a in xs], equation=eq)


def _pad(g: GraphBuilder, c: Call) -> list[str]:
    x, widths, mode, value = c.args[:4]
    pads = [int(w[0]) for w in widths] + [int(w[1]) for w in widths]
    onnx_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    ins = [g.value(x), g.ints(pads)] + ([g.value(float(value or 0), x)] if mode == "constant" else [])
    return g.node("Pad", ins, mode=onnx_mode)


def _open_mesh(index: tuple[Any, ...]) -> list[Any] | None:
    """The 1-d index arrays of an ``ix_``-style index (array k varies along axis k only), else None."""
    arrays = [i for i in index if hasattr(i, "shape")]
    if len(arrays) < 2 or any(len(a.shape) != len(arrays) for a in arrays):
        return None
    flat = []
    for k, a in enumerate(arrays):
        if any(s != 1 for d, s in enumerate(a.shape) if d != k):
            return None
        flat.append(np.asarray(host(a)).reshape(-1))
    return flat


def _getitem(g: GraphBuilder, c: Call) -> list[str]:
    x, index = c.args[:2]
    index = index if isinstance(index, tuple) else (index,)
    mesh = _open_mesh(index)
    if mesh is not None:  # x[..., ix_(a, b)]: one Gather per indexed axis
        it = iter(mesh)
        index = tuple(next(it) if hasattr(i, "shape") else i for i in index)
        name = g.value(x)
        for d, i in enumerate(index):
            if hasattr(i, "shape"):
                name = g.node("Gather", [name, g.value(np.asarray(i, dtype=np.int64))], axis=d)[0]
            elif i != slice(None):
                raise ExportError("GetItem mixing an open-mesh index with other indices has no ONNX form yet")
        return [name]
    name, dim = g.value(x), 0
    squeeze: list[int] = []
    unsqueeze: list[int] = []
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    for item in index:
        if item is Ellipsis:
            dim += x.ndim - n_real
        elif item is None:
            unsqueeze.append(dim + len(unsqueeze) - len(squeeze))
        elif isinstance(item, slice):
            start, stop, step = item.indices(x.shape[dim])
            if (start, stop, step) != (0, x.shape[dim], 1):
                if dim in g.dyn(x):
                    raise ExportError(f"GetItem: slicing dynamic axis {dim} of {tuple(x.shape)}")
                name = g.node("Slice", [name, g.ints([start]), g.ints([stop if step > 0 or stop >= 0 else
                                                                         -x.shape[dim] - 1]),
                                        g.ints([dim]), g.ints([step])])[0]  # fmt: skip
            dim += 1
        elif isinstance(item, (int, np.integer)):
            name = g.node("Gather", [name, g.const(np.int64(item))], axis=dim - len(squeeze))[0]
            squeeze.append(dim)
            dim += 1
        elif hasattr(item, "shape") and sum(hasattr(i, "shape") for i in index) == 1:  # one array: a Gather
            idx = item if isinstance(item, Tensor) else np.asarray(host(item))
            if getattr(idx, "dtype", None) is not None and str(idx.dtype) in ("bool", "ember.bool"):
                raise ExportError("GetItem with a boolean mask has no ONNX form (its size depends on the values)")
            name = g.node("Gather", [name, g.value(idx)], axis=dim - len(squeeze))[0]
            dim += 1
        else:
            raise ExportError(f"GetItem with an index of type {type(item).__name__} has no ONNX form yet")
    if unsqueeze:
        name = g.node("Unsqueeze", [name, g.ints(unsqueeze)])[0]
    return [name]


def _flip(g: GraphBuilder, c: Call) -> list[str]:
    x, dims = c.args[:2]
    n = len(dims)
    big = np.iinfo(np.int64).max
    return g.node("Slice", [g.value(x), g.ints([-1] * n), g.ints([-big] * n), g.ints([int(d) for d in dims]),
                            g.ints([-1] * n)])  # fmt: skip


def _cumsum(g: GraphBuilder, c: Call) -> list[str]:
    return g.node("CumSum", [g.value(c.args[0]), g.const(np.int64(c.args[1]))])


def _params_unary(op: str, key: str) -> Emitter:
    def emit(g: GraphBuilder, c: Call) -> list[str]:
        attrs: dict[str, Any] = {key: float(c.args[1])}
        return g.node(op, [g.value(c.args[0])], **attrs)

    return emit


_DIRECT = {
    "Neg": "Neg", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt", "Abs": "Abs", "Tanh": "Tanh", "Sigmoid": "Sigmoid",
    "Relu": "Relu", "Erf": "Erf", "Floor": "Floor", "Ceil": "Ceil", "Round": "Round", "Sign": "Sign", "Sin": "Sin",
    "Cos": "Cos", "Tan": "Tan", "Asin": "Asin", "Acos": "Acos", "Atan": "Atan", "Sinh": "Sinh", "Cosh": "Cosh",
    "Asinh": "Asinh", "Acosh": "Acosh", "Atanh": "Atanh", "Reciprocal": "Reciprocal", "LogicalNot": "Not",
    "Isnan": "IsNaN", "Isinf": "IsInf", "Clone": "Identity", "Contiguous": "Identity", "Hardswish": "HardSwish",
}  # fmt: skip
_BINARY = {
    "Add": "Add", "Sub": "Sub", "Mul": "Mul", "Div": "Div", "Pow": "Pow", "Maximum": "Max", "Minimum": "Min",
    "Equal": "Equal", "Less": "Less", "Greater": "Greater", "LessEqual": "LessOrEqual",
    "GreaterEqual": "GreaterOrEqual", "LogicalAnd": "And", "LogicalOr": "Or", "LogicalXor": "Xor",
    "MatMul": "MatMul", "Remainder": "Mod",
}  # fmt: skip

#: Ember operator class name -> emitter
EMITTERS: dict[str, Emitter] = {
    **{k: _unary(v) for k, v in _DIRECT.items()}, **{k: _binary(v) for k, v in _BINARY.items()},
    "Rsqrt": _chain("Sqrt", "Reciprocal"), "Square": lambda g, c: g.node("Mul", [g.value(c.args[0])] * 2),
    "Gelu": _gelu, "GeluTanh": _gelu_tanh, "Silu": _silu, "Softplus": _softplus, "Elu": _elu,
    "LeakyRelu": _params_unary("LeakyRelu", "alpha"), "Celu": _params_unary("Celu", "alpha"),
    "Hardsigmoid": _unary("HardSigmoid", alpha=1 / 6, beta=0.5), "Shrink": _shrink, "Clamp": _clamp, "Hardtanh": _clamp,
    "Where": _where, "Cast": _cast, "Reshape": _reshape, "Expand": _expand, "Permute": _permute, "Cat": _cat,
    "Assign": _assign, "Stack": _stack, "Split": _split, "Sum": _sum, "Mean": _mean, "Amax": _amax, "Norm2": _norm2,
    "ArgExtreme": _arg,
    "MaxDim": _max_dim, "_Linear": _linear, "Conv": _conv, "ConvT": _conv_t, "MaxPool": _max_pool,
    "AvgPool": _avg_pool, "BatchNormEval": _batch_norm, "Standardize": _standardize, "Embedding": _embedding,
    "NativeLayerNorm": _layer_norm, "ScaledDotProductAttention": _attention, "DropoutAdd": _dropout_add,
    "_Tri": _tri, "Einsum": _einsum, "Pad": _pad, "GetItem": _getitem, "Flip": _flip, "CumSum": _cumsum,
    "Softmax": lambda g, c: g.node("Softmax", [g.value(c.args[0])], axis=int(c.args[1])),
    "LogSoftmax": lambda g, c: g.node("LogSoftmax", [g.value(c.args[0])], axis=int(c.args[1])),
}  # fmt: skip
