"""Each converter of the op table and each Expression form, on hand-written one-operator graphs, against torch."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
import ember.pnnx as ep
from ember.pnnx._expression import BINARY, UNARY, compile_expression, parse_expression

from .conftest import write_pnnx


def _fmt(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return repr(v) if "." in repr(v) or "e" in repr(v) else f"{v}.0"
    if isinstance(v, (tuple, list)):
        return "(" + ",".join(_fmt(e) for e in v) + ")"
    return str(v)


def _graph(tmp_path, typ, params, shapes, attrs=None, keys=None, n_out=1, name="op"):
    """Inputs (one pnnx.Input each) -> one operator -> outputs."""
    ins = [f"i{k}" for k in range(len(shapes))]
    outs = [f"o{k}" for k in range(n_out)]
    lines = [f"pnnx.Input in{k} 0 1 {n}" for k, n in enumerate(ins)]
    items = [f"{k}={_fmt(v)}" for k, v in params.items()]
    items += [f"@{k}=({','.join(map(str, a.shape))})f32" for k, a in (attrs or {}).items()]
    items += [f"${key}={ins[k]}" for k, key in enumerate(keys or []) if key]
    items += [f"#{n}=({','.join(map(str, s))})f32" for n, s in zip(ins, shapes)]
    lines.append(f"{typ} {name} {len(ins)} {n_out} {' '.join(ins + outs)} {' '.join(items)}")
    lines.append(f"pnnx.Output out {n_out} 0 {' '.join(outs)}")
    weights = {f"{name}.{k}": a for k, a in (attrs or {}).items()}
    return ep.load(write_pnnx(tmp_path, "m", lines, weights))


def _close(got, ref, tol=1e-5):
    got = got if isinstance(got, tuple) else (got,)
    ref = ref if isinstance(ref, (tuple, list)) else (ref,)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        r = r.detach().numpy()
        assert tuple(g.shape) == r.shape
        np.testing.assert_allclose(g.detach().numpy(), r, rtol=tol, atol=tol)


NN_CASES = [
    ("Conv1d", dict(in_channels=2, out_channels=4, kernel_size=(3,), stride=(2,), padding=(1,), dilation=(1,),
                    groups=2, bias=True, padding_mode="zeros"), (2, 2, 9)),
    ("Conv2d", dict(in_channels=4, out_channels=6, kernel_size=(3, 3), stride=(1, 2), padding=(2, 2),
                    dilation=(2, 1), groups=2, bias=True, padding_mode="zeros"), (2, 4, 7, 8)),
    ("Conv2d", dict(in_channels=3, out_channels=4, kernel_size=(1, 1), stride=(1, 1), padding=(0, 0),
                    dilation=(1, 1), groups=1, bias=False, padding_mode="zeros"), (1, 3, 5, 5)),
    ("Conv3d", dict(in_channels=2, out_channels=3, kernel_size=(2, 2, 2), stride=(1, 1, 1), padding=(1, 1, 1),
                    dilation=(1, 1, 1), groups=1, bias=True, padding_mode="zeros"), (1, 2, 4, 4, 4)),
    ("ConvTranspose1d", dict(in_channels=2, out_channels=3, kernel_size=(3,), stride=(2,), padding=(1,),
                             output_padding=(1,), dilation=(1,), groups=1, bias=True, padding_mode="zeros"), (2, 2, 5)),
    ("ConvTranspose2d", dict(in_channels=4, out_channels=2, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1),
                             output_padding=(1, 1), dilation=(1, 1), groups=2, bias=True, padding_mode="zeros"),
     (1, 4, 5, 5)),
    ("Linear", dict(in_features=5, out_features=3, bias=True), (2, 4, 5)),
    ("BatchNorm1d", dict(num_features=3, eps=1e-3, affine=True), (4, 3, 5)),
    ("BatchNorm2d", dict(num_features=3, eps=1e-5, affine=True), (2, 3, 4, 4)),
    ("BatchNorm3d", dict(num_features=2, eps=1e-5, affine=True), (1, 2, 3, 3, 3)),
    ("InstanceNorm2d", dict(num_features=3, eps=1e-5, affine=True), (2, 3, 4, 4)),
    ("LayerNorm", dict(normalized_shape=(4,), eps=1e-5, elementwise_affine=True), (2, 3, 4)),
    ("GroupNorm", dict(num_groups=2, num_channels=4, eps=1e-5, affine=True), (2, 4, 3, 3)),
    ("ReLU", {}, (2, 5)), ("ReLU6", {}, (2, 5)), ("SiLU", {}, (2, 5)), ("Sigmoid", {}, (2, 5)),
    ("Tanh", {}, (2, 5)), ("Mish", {}, (2, 5)), ("Hardswish", {}, (2, 5)), ("Hardsigmoid", {}, (2, 5)),
    ("GELU", {}, (2, 5)), ("GELU", dict(approximate="tanh"), (2, 5)), ("SELU", {}, (2, 5)),
    ("ELU", dict(alpha=0.7), (2, 5)), ("LeakyReLU", dict(negative_slope=0.2), (2, 5)),
    ("Hardtanh", dict(min_val=-0.5, max_val=0.7), (2, 5)), ("Softplus", dict(beta=2.0, threshold=10.0), (2, 5)),
    ("Softsign", {}, (2, 5)), ("LogSigmoid", {}, (2, 5)), ("PReLU", dict(num_parameters=3), (2, 3, 4)),
    ("Softmax", dict(dim=1), (2, 5, 3)), ("LogSoftmax", dict(dim=-1), (2, 5)),
    ("MaxPool1d", dict(kernel_size=(3,), stride=(2,), padding=(1,), dilation=(1,), ceil_mode=False,
                       return_indices=False), (1, 2, 9)),
    ("MaxPool2d", dict(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1), ceil_mode=True,
                       return_indices=False), (1, 2, 8, 8)),
    ("AvgPool1d", dict(kernel_size=(3,), stride=(2,), padding=(1,), ceil_mode=False, count_include_pad=True),
     (1, 2, 9)),
    ("AvgPool2d", dict(kernel_size=(2, 2), stride=(2, 2), padding=(1, 1), ceil_mode=False, count_include_pad=False,
                       divisor_override=None), (1, 2, 7, 7)),
    ("AdaptiveAvgPool1d", dict(output_size=(3,)), (1, 2, 7)),
    ("AdaptiveAvgPool2d", dict(output_size=(2, 3)), (1, 2, 7, 8)),
    ("AdaptiveMaxPool2d", dict(output_size=(2, 2), return_indices=False), (1, 2, 5, 6)),
    ("Upsample", dict(mode="nearest", scale_factor=(2.0, 2.0), size=None), (1, 2, 3, 4)),
    ("Upsample", dict(mode="bilinear", size=(5, 7), align_corners=False), (1, 2, 3, 4)),
    ("UpsamplingNearest2d", dict(scale_factor=(2.0, 2.0)), (1, 2, 3, 3)),
    ("UpsamplingBilinear2d", dict(size=(5, 6)), (1, 2, 3, 3)),
    ("PixelShuffle", dict(upscale_factor=2), (1, 8, 3, 3)),
    ("PixelUnshuffle", dict(downscale_factor=2), (1, 2, 4, 6)),
    ("ZeroPad2d", dict(padding=(1, 2, 0, 1)), (1, 2, 3, 3)),
    ("ConstantPad2d", dict(padding=(1, 1, 2, 0), value=0.5), (1, 2, 3, 3)),
    ("ReflectionPad2d", dict(padding=(1, 1, 2, 1)), (1, 2, 4, 4)),
    ("ReplicationPad2d", dict(padding=(2, 1, 1, 1)), (1, 2, 3, 3)),
    ("Dropout", {}, (2, 5)), ("Dropout2d", {}, (1, 2, 3, 3)), ("Identity", {}, (2, 3)),
    ("Flatten", dict(start_dim=1, end_dim=-1), (2, 3, 4)),
    ("Unflatten", dict(dim=1, unflattened_size=(2, 3)), (2, 6)),
]  # fmt: skip


@pytest.mark.parametrize(("cls", "params", "shape"), NN_CASES, ids=[c[0] for c in NN_CASES])
def test_nn_converter_matches_torch(torch, tmp_path, cls, params, shape):
    torch.manual_seed(0)
    kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in params.items()}
    tm = getattr(torch.nn, cls)(**kw).eval()
    with torch.no_grad():
        for name, t in tm.named_parameters():
            t.copy_(torch.randn_like(t) * 0.5 + (1.0 if name == "weight" and "Norm" in cls else 0.0))
        for name, t in tm.named_buffers():
            if name == "running_var":
                t.copy_(torch.rand_like(t) + 0.5)
            elif name == "running_mean":
                t.copy_(torch.randn_like(t))
    attrs = {k: v.detach().numpy() for k, v in tm.state_dict().items() if k != "num_batches_tracked"}
    x = torch.randn(*shape)
    m = _graph(tmp_path, f"nn.{cls}", params, [shape], attrs)
    with torch.no_grad():
        _close(m(ember.tensor(x.numpy())), tm(x))
    assert {n for n, _ in m.named_parameters()} == {f"op.{n}" for n, _ in tm.named_parameters()}


def _slice_ref(x, dims, starts, ends, steps, selects):
    idx = [slice(None)] * x.ndim
    for d, a, b, s, sel in zip(dims, starts, ends, steps, selects):
        idx[d] = sel if sel != 2147483647 else slice(a, None if b == 2147483647 else b, s)
    return x[tuple(idx)]


R = np.random.default_rng(0)
FN_CASES = [
    # (type, params, input shapes, input keys, n_out, torch reference)
    ("F.relu", {}, [(2, 5)], ["input"], 1, "F.relu"),
    ("F.relu6", {}, [(2, 5)], ["input"], 1, "F.relu6"),
    ("F.silu", {}, [(2, 5)], ["input"], 1, "F.silu"),
    ("F.sigmoid", {}, [(2, 5)], ["input"], 1, "F.sigmoid"),
    ("F.tanh", {}, [(2, 5)], ["input"], 1, "F.tanh"),
    ("F.gelu", dict(approximate="none"), [(2, 5)], ["input"], 1, "F.gelu"),
    ("F.mish", {}, [(2, 5)], ["input"], 1, "F.mish"),
    ("F.hardswish", {}, [(2, 5)], ["input"], 1, "F.hardswish"),
    ("F.hardsigmoid", {}, [(2, 5)], ["input"], 1, "F.hardsigmoid"),
    ("F.leaky_relu", dict(negative_slope=0.1), [(2, 5)], ["input"], 1, "F.leaky_relu"),
    ("F.elu", dict(alpha=0.5), [(2, 5)], ["input"], 1, "F.elu"),
    ("F.selu", {}, [(2, 5)], ["input"], 1, "F.selu"),
    ("F.celu", dict(alpha=0.5), [(2, 5)], ["input"], 1, "F.celu"),
    ("F.softplus", dict(beta=1.5, threshold=20.0), [(2, 5)], ["input"], 1, "F.softplus"),
    ("F.hardtanh", dict(min_val=-0.3, max_val=0.4), [(2, 5)], ["input"], 1, "F.hardtanh"),
    ("F.logsigmoid", {}, [(2, 5)], ["input"], 1, "F.logsigmoid"),
    ("F.prelu", {}, [(2, 3, 4), (3,)], ["input", "weight"], 1, "F.prelu"),
    ("F.softmax", dict(dim=1), [(2, 5, 3)], ["input"], 1, "F.softmax"),
    ("F.log_softmax", dict(dim=-1), [(2, 5)], ["input"], 1, "F.log_softmax"),
    ("torch.sigmoid", {}, [(2, 5)], ["input"], 1, "torch.sigmoid"),
    ("torch.tanh", {}, [(2, 5)], ["input"], 1, "torch.tanh"),
    ("torch.relu", {}, [(2, 5)], ["input"], 1, "torch.relu"),
    ("F.linear", {}, [(2, 4), (3, 4), (3,)], ["input", "weight", "bias"], 1, "F.linear"),
    ("F.conv1d", dict(stride=(1,), padding=(1,), dilation=(1,), groups=1), [(1, 2, 6), (3, 2, 3), (3,)],
     ["input", "weight", "bias"], 1, "F.conv1d"),
    ("F.conv2d", dict(stride=(2, 2), padding=(1, 1), dilation=(1, 1), groups=1), [(1, 2, 6, 6), (3, 2, 3, 3), (3,)],
     ["input", "weight", "bias"], 1, "F.conv2d"),
    ("F.conv_transpose2d", dict(stride=(2, 2), padding=(0, 0), output_padding=(0, 0), dilation=(1, 1), groups=1),
     [(1, 2, 3, 3), (2, 3, 2, 2), (3,)], ["input", "weight", "bias"], 1, "F.conv_transpose2d"),
    ("F.batch_norm", dict(eps=1e-5), [(2, 3, 4), (3,), (3,), (3,), (3,)],
     ["input", "running_mean", "running_var", "weight", "bias"], 1, "bn"),
    ("F.layer_norm", dict(normalized_shape=(4,), eps=1e-5), [(2, 3, 4), (4,), (4,)], ["input", "weight", "bias"], 1,
     "F.layer_norm"),
    ("F.group_norm", dict(num_groups=2, eps=1e-5), [(2, 4, 3), (4,), (4,)], ["input", "weight", "bias"], 1,
     "F.group_norm"),
    ("F.instance_norm", dict(eps=1e-5), [(2, 3, 4, 4)], ["input"], 1, "F.instance_norm"),
    ("F.normalize", dict(p=2.0, dim=1, eps=1e-12), [(2, 5)], ["input"], 1, "F.normalize"),
    ("F.dropout", dict(p=0.5, training=False), [(2, 5)], ["input"], 1, "F.dropout"),
    ("F.dropout2d", dict(p=0.5, training=False), [(1, 2, 3, 3)], ["input"], 1, "F.dropout2d"),
    ("F.max_pool1d", dict(kernel_size=(2,), stride=(2,), padding=(0,), dilation=(1,), ceil_mode=False,
                          return_indices=False), [(1, 2, 7)], ["input"], 1, "F.max_pool1d"),
    ("F.max_pool2d", dict(kernel_size=(2, 2), stride=None, padding=(0, 0), dilation=(1, 1), ceil_mode=False,
                          return_indices=False), [(1, 2, 6, 6)], ["input"], 1, "F.max_pool2d"),
    ("F.avg_pool1d", dict(kernel_size=(3,), stride=(1,), padding=(1,), ceil_mode=False, count_include_pad=True),
     [(1, 2, 7)], ["input"], 1, "F.avg_pool1d"),
    ("F.avg_pool2d", dict(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=True, count_include_pad=False,
                          divisor_override=None), [(1, 2, 6, 6)], ["input"], 1, "F.avg_pool2d"),
    ("F.adaptive_avg_pool1d", dict(output_size=(1,)), [(1, 2, 7)], ["input"], 1, "F.adaptive_avg_pool1d"),
    ("F.adaptive_avg_pool2d", dict(output_size=(1, 1)), [(1, 2, 5, 5)], ["input"], 1, "F.adaptive_avg_pool2d"),
    ("F.adaptive_max_pool2d", dict(output_size=(2, 2), return_indices=False), [(1, 2, 5, 5)], ["input"], 1,
     "F.adaptive_max_pool2d"),
    ("F.interpolate", dict(scale_factor=(2.0, 2.0), mode="nearest"), [(1, 2, 3, 3)], ["input"], 1, "F.interpolate"),
    ("F.upsample", dict(size=(5, 4), mode="bilinear", align_corners=True), [(1, 2, 3, 3)], ["input"], 1,
     "F.interpolate"),
    ("F.upsample_nearest", dict(scale_factor=(2.0, 2.0)), [(1, 2, 3, 3)], ["input"], 1, "F.upsample_nearest"),
    ("F.upsample_bilinear", dict(size=(4, 5)), [(1, 2, 3, 3)], ["input"], 1, "F.upsample_bilinear"),
    ("F.pad", dict(pad=(1, 2), mode="constant", value=0.5), [(1, 2, 3)], ["input"], 1, "F.pad"),
    ("F.pad", dict(pad=(1, 1, 1, 1), mode="reflect", value=None), [(1, 2, 3, 3)], ["input"], 1, "F.pad"),
    ("F.pixel_shuffle", dict(upscale_factor=2), [(1, 4, 2, 2)], ["input"], 1, "F.pixel_shuffle"),
    ("F.pixel_unshuffle", dict(downscale_factor=2), [(1, 1, 4, 4)], ["input"], 1, "F.pixel_unshuffle"),
    ("F.scaled_dot_product_attention", {}, [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)], ["query", "key", "value"],
     1, "F.scaled_dot_product_attention"),
    ("torch.cat", dict(dim=1), [(2, 3), (2, 1), (2, 2)], [None, None, None], 1, "torch.cat"),
    ("torch.concat", dict(dim=0), [(1, 3), (2, 3)], [None, None], 1, "torch.cat"),
    ("torch.stack", dict(dim=1), [(2, 3), (2, 3)], [None, None], 1, "torch.stack"),
    ("torch.flatten", dict(start_dim=1, end_dim=-1), [(2, 3, 4)], ["input"], 1, "torch.flatten"),
    ("torch.split", dict(split_size_or_sections=(2, 1, 3), dim=1), [(2, 6)], ["tensor"], 3, "torch.split"),
    ("torch.split", dict(split_size_or_sections=2, dim=0), [(4, 3)], ["tensor"], 2, "torch.split"),
    ("torch.chunk", dict(chunks=2, dim=1), [(2, 4)], ["input"], 2, "torch.chunk"),
    ("torch.unbind", dict(dim=0), [(3, 2)], ["input"], 3, "torch.unbind"),
    ("torch.matmul", {}, [(2, 3, 4), (4, 5)], ["input", "other"], 1, "torch.matmul"),
    ("torch.bmm", {}, [(2, 3, 4), (2, 4, 5)], ["input", "mat2"], 1, "torch.bmm"),
    ("torch.mm", {}, [(3, 4), (4, 5)], ["input", "mat2"], 1, "torch.mm"),
    ("torch.addmm", dict(beta=0.5, alpha=2.0), [(5,), (3, 4), (4, 5)], ["input", "mat1", "mat2"], 1, "torch.addmm"),
    ("torch.einsum", dict(equation="ij,jk->ik"), [(2, 3), (3, 4)], [None, None], 1, "einsum"),
    ("torch.permute", dict(dims=(2, 0, 1)), [(2, 3, 4)], ["input"], 1, "torch.permute"),
    ("torch.transpose", dict(dim0=0, dim1=2), [(2, 3, 4)], ["input"], 1, "torch.transpose"),
    ("torch.reshape", dict(shape=(3, -1)), [(2, 3, 4)], ["input"], 1, "torch.reshape"),
    ("torch.squeeze", dict(dim=1), [(2, 1, 4)], ["input"], 1, "torch.squeeze"),
    ("torch.unsqueeze", dict(dim=-1), [(2, 4)], ["input"], 1, "torch.unsqueeze"),
    ("torch.mean", dict(dim=(1,), keepdim=True), [(2, 3, 4)], ["input"], 1, "torch.mean"),
    ("torch.sum", dict(dim=(0, 2), keepdim=False), [(2, 3, 4)], ["input"], 1, "torch.sum"),
    ("torch.amax", dict(dim=(1,), keepdim=False), [(2, 3, 4)], ["input"], 1, "torch.amax"),
    ("torch.amin", dict(dim=(-1,), keepdim=True), [(2, 3, 4)], ["input"], 1, "torch.amin"),
    ("torch.max", dict(dim=1, keepdim=False), [(2, 3, 4)], ["input"], 2, "torch.max"),
    ("torch.min", dict(dim=0, keepdim=True), [(2, 3)], ["input"], 2, "torch.min"),
    ("torch.argmax", dict(dim=1, keepdim=False), [(2, 5)], ["input"], 1, "torch.argmax"),
    ("torch.clamp", dict(min=-0.5, max=0.25), [(2, 5)], ["input"], 1, "torch.clamp"),
    ("torch.where", {}, [(2, 3), (2, 3), (2, 3)], ["condition", "input", "other"], 1, "where"),
    ("torch.roll", dict(shifts=(1,), dims=(1,)), [(2, 5)], ["input"], 1, "torch.roll"),
    ("torch.flip", dict(dims=(0, 1)), [(2, 5)], ["input"], 1, "torch.flip"),
    ("Tensor.reshape", dict(shape=(4, 6)), [(2, 3, 4)], ["input"], 1, "Tensor.reshape"),
    ("Tensor.view", dict(shape=(-1, 4)), [(2, 3, 4)], ["input"], 1, "Tensor.view"),
    ("Tensor.expand", dict(sizes=(3, 2, 4)), [(1, 2, 1)], ["input"], 1, "Tensor.expand"),
    ("Tensor.permute", dict(dims=(0, 2, 1)), [(2, 3, 4)], ["input"], 1, "Tensor.permute"),
    ("Tensor.repeat", dict(sizes=(2, 1, 3)), [(2, 3, 1)], ["input"], 1, "Tensor.repeat"),
    ("Tensor.slice", dict(dim=1, start=1, end=2147483647, step=2), [(2, 7, 3)], ["input"], 1, "slice1"),
    ("Tensor.slice", dict(dim=-1, start=-3, end=-1, step=1), [(2, 7, 5)], ["input"], 1, "slice1"),
    ("Tensor.slice", dict(dims=(2, 3), starts=(1, 0), ends=(2147483647, 2147483647), steps=(2, 2),
                          selects=(2147483647, 2147483647)), [(1, 3, 8, 8)], ["input"], 1, "sliceN"),
    ("Tensor.slice", dict(dims=(0, 2), starts=(0, 1), ends=(2147483647, 3), steps=(1, 1),
                          selects=(1, 2147483647)), [(3, 2, 5)], ["input"], 1, "sliceN"),
    ("Tensor.select", dict(dim=1, index=-1), [(2, 3, 4)], ["input"], 1, "Tensor.select"),
    ("Tensor.contiguous", dict(memory_format="torch.contiguous_format"), [(2, 3)], ["input"], 1, "ident"),
    ("Tensor.expand_as", {}, [(1, 3), (2, 3)], ["input", "other"], 1, "Tensor.expand_as"),
    ("Tensor.masked_fill", dict(value=-1.5), [(2, 3), (2, 3)], ["input", "mask"], 1, "masked_fill"),
    ("torch.arange", dict(dtype="torch.float"), [], [], 1, "arange"),
    ("prim::TupleConstruct", {}, [(2,), (3,)], [None, None], 1, "tuple"),
]  # fmt: skip


def _reference(torch, ref, typ, params, xs, keys):
    F = torch.nn.functional
    kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in params.items()}
    special = {
        "bn": lambda: F.batch_norm(xs[0], xs[1], xs[2], xs[3], xs[4], eps=kw["eps"]),
        "einsum": lambda: torch.einsum(kw["equation"], *xs),
        "where": lambda: torch.where(xs[0] > 0, xs[1], xs[2]),
        "masked_fill": lambda: xs[0].masked_fill(xs[1] > 0, kw["value"]),
        "slice1": lambda: _slice_ref(xs[0], [kw["dim"]], [kw["start"]], [kw["end"]], [kw["step"]], [2147483647]),
        "sliceN": lambda: _slice_ref(xs[0], kw["dims"], kw["starts"], kw["ends"], kw["steps"], kw["selects"]),
        "ident": lambda: xs[0],
        "arange": lambda: torch.arange(5, dtype=torch.float32),
        "tuple": lambda: tuple(xs),
    }
    if ref in special:
        return special[ref]()
    mod, name = ref.split(".")
    if mod == "Tensor":
        return getattr(xs[0], name)(*xs[1:], *kw.values())
    fn = getattr({"F": F, "torch": torch}[mod], name)
    if typ in ("torch.cat", "torch.concat", "torch.stack"):
        return fn(xs, **kw)
    return fn(*[x for x, k in zip(xs, keys) if not k], **{k: x for x, k in zip(xs, keys) if k}, **kw)


@pytest.mark.parametrize(("typ", "params", "shapes", "keys", "n_out", "ref"), FN_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(FN_CASES)])  # fmt: skip
def test_function_converter_matches_torch(torch, tmp_path, typ, params, shapes, keys, n_out, ref):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if ref == "bn":
        arrays[2] = np.abs(arrays[2]) + 0.5
    if typ == "torch.arange":
        shapes, keys, arrays = [()], ["end"], [None]
    m = _graph(tmp_path, typ, params, shapes, keys=keys, n_out=n_out)
    xs = [torch.from_numpy(a) if a is not None else None for a in arrays]
    if ref in ("where", "masked_fill"):
        arrays[0 if ref == "where" else 1] = arrays[0 if ref == "where" else 1] > 0
    ins = [ember.tensor(a) for a in arrays] if typ != "torch.arange" else [5]
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecated upsample_* functions warn
        want = _reference(torch, ref, typ, params, xs, keys)
    got = m(*ins)
    if typ in ("torch.max", "torch.min"):
        _close(got[0], want[0])
        np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
    elif typ == "torch.argmax":
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    else:
        _close(got, want)


def test_function_attribute_weights_are_trainable_and_grid_constants_are_buffers(tmp_path):
    w = np.ones((2, 3), np.float32)
    lines = [
        "pnnx.Input in0 0 1 0",
        "pnnx.Attribute lin_w 0 1 1 @data=(2,3)f32",
        "pnnx.Attribute grid 0 1 2 @data=(2)f32",
        "F.linear F.linear_0 2 1 0 1 3 $input=0 $weight=1",
        "pnnx.Expression e 2 1 3 2 4 expr=add(@0,@1)",
        "pnnx.Output out 1 0 4",
    ]
    m = ep.load(write_pnnx(tmp_path, "a", lines, {"lin_w.data": w, "grid.data": np.array([1, 2], np.float32)}))
    assert [n for n, _ in m.named_parameters()] == ["lin_w.data"]
    assert [n for n, _ in m.named_buffers()] == ["grid.data"]
    out = m(ember.ones(1, 3))
    np.testing.assert_allclose(out.detach().numpy(), [[4.0, 5.0]])
    out.sum().backward()
    np.testing.assert_allclose(m.lin_w.data.grad.numpy(), np.ones((2, 3)))


# -- pnnx.Expression --------------------------------------------------------------------------------

EXPRESSIONS = [
    ("add(@0,@1)", lambda a, b: a + b),
    ("sub(@0,@1)", lambda a, b: a - b),
    ("mul(@0,@1)", lambda a, b: a * b),
    ("div(@0,@1)", lambda a, b: a / b),
    ("floor_divide(@0,@1)", lambda a, b: np.floor_divide(a, b)),
    ("remainder(@0,@1)", lambda a, b: np.remainder(a, b)),
    ("fmod(@0,@1)", lambda a, b: np.fmod(a, b)),
    ("pow(abs(@0),@1)", lambda a, b: np.abs(a) ** b),
    ("atan2(@0,@1)", np.arctan2),
    ("max(@0,@1)", np.maximum),
    ("maximum(@0,0.5)", lambda a, b: np.maximum(a, 0.5)),
    ("min(@0,@1)", np.minimum),
    ("minimum(-0.25,@1)", lambda a, b: np.minimum(-0.25, b)),
    ("logaddexp(@0,@1)", np.logaddexp),
    ("mul(add(mul(@0,2),@1),16.0)", lambda a, b: (a * 2 + b) * 16.0),
    ("mul(pow(mul(@0,2),2),@1)", lambda a, b: (a * 2) ** 2 * b),
    ("sub(1,div(@0,3))", lambda a, b: 1 - a / 3),
    ("mul(@0,1.000000e-05)", lambda a, b: a * 1e-5),
    ("add(@0,size(@1,1))", lambda a, b: a + b.shape[1]),
    ("neg(@0)", lambda a, b: -a),
    ("abs(@0)", lambda a, b: np.abs(a)),
    ("acos(mul(@0,0.5))", lambda a, b: np.arccos(a * 0.5)),
    ("acosh(add(abs(@0),1))", lambda a, b: np.arccosh(np.abs(a) + 1)),
    ("asin(mul(@0,0.5))", lambda a, b: np.arcsin(a * 0.5)),
    ("asinh(@0)", lambda a, b: np.arcsinh(a)),
    ("atan(@0)", lambda a, b: np.arctan(a)),
    ("atanh(mul(@0,0.5))", lambda a, b: np.arctanh(a * 0.5)),
    ("ceil(@0)", lambda a, b: np.ceil(a)),
    ("cos(@0)", lambda a, b: np.cos(a)),
    ("cosh(@0)", lambda a, b: np.cosh(a)),
    ("erf(@0)", lambda a, b: np.vectorize(math.erf)(a)),
    ("exp(@0)", lambda a, b: np.exp(a)),
    ("expm1(@0)", lambda a, b: np.expm1(a)),
    ("floor(@0)", lambda a, b: np.floor(a)),
    ("log(abs(@0))", lambda a, b: np.log(np.abs(a))),
    ("log10(abs(@0))", lambda a, b: np.log10(np.abs(a))),
    ("log1p(abs(@0))", lambda a, b: np.log1p(np.abs(a))),
    ("reciprocal(@0)", lambda a, b: 1 / a),
    ("round(mul(@0,4))", lambda a, b: np.round(a * 4)),
    ("rsqrt(abs(@0))", lambda a, b: 1 / np.sqrt(np.abs(a))),
    ("sign(@0)", lambda a, b: np.sign(a)),
    ("sin(@0)", lambda a, b: np.sin(a)),
    ("sinh(@0)", lambda a, b: np.sinh(a)),
    ("sqrt(abs(@0))", lambda a, b: np.sqrt(np.abs(a))),
    ("square(@0)", lambda a, b: a * a),
    ("tan(@0)", lambda a, b: np.tan(a)),
    ("tanh(@0)", lambda a, b: np.tanh(a)),
    ("trunc(mul(@0,3))", lambda a, b: np.trunc(a * 3)),
]


@pytest.mark.parametrize(("expr", "ref"), EXPRESSIONS, ids=[e[0] for e in EXPRESSIONS])
def test_expression_on_tensors(tmp_path, expr, ref):
    rng = np.random.default_rng(2)
    a = rng.uniform(-1.5, 1.5, (2, 3)).astype(np.float32)
    b = rng.uniform(0.5, 1.5, (2, 3)).astype(np.float32)
    lines = ["pnnx.Input a 0 1 0", "pnnx.Input b 0 1 1", f"pnnx.Expression e 2 1 0 1 2 expr={expr}",
             "pnnx.Output out 1 0 2"]  # fmt: skip
    got = ep.load(write_pnnx(tmp_path, "x", lines))(ember.tensor(a), ember.tensor(b))
    np.testing.assert_allclose(got.detach().numpy(), ref(a, b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("-1", -1),
        ("2.5", 2.5),
        ("1.000000e-05", 1e-5),
        ("[1,1]", [1, 1]),
        ("[size(@0,0),-1]", [2, -1]),
        ("size(@0)", [2, 3, 4]),
        ("size(@0,-1)", 4),
        ("int(mul(mul(size(@0,2),3),size(@0,1)))", 36),
        ("floor_divide(size(@0,2),3)", 1),
        ("div(size(@0,2),8)", 0.5),
        ("remainder(7,size(@0,1))", 1),
        ("and(1,3)", 1),
        ("or(4,1)", 5),
        ("xor(6,3)", 5),
        ("lshift(1,3)", 8),
        ("rshift(16,2)", 4),
        ("pow(2,10)", 1024),
        ("max(size(@0,1),5)", 5),
        ("min(2.5,1)", 1),
        ("torch.long(2.7)", 2),
        ("torch.float(2)", 2.0),
        ("torch.bool(0)", False),
        ("neg(sqrt(16))", -4.0),
        ("ij", "ij"),
        ("(1.000000e+00+2.000000e+00j)", None),
    ],
)
def test_expression_on_numbers_stays_python(expr, want):
    if expr.startswith("("):  # complex literal, as pnnx prints it (without the parentheses)
        f = compile_expression(parse_expression("1.000000e+00+2.000000e+00j"), 0)
        assert f([]) == complex(1, 2)
        return
    f = compile_expression(parse_expression(expr), 1)
    assert f([ember.zeros(2, 3, 4)]) == want


def test_expression_grammar_is_complete():
    for name in ("add", "sub", "mul", "div", "floor_divide", "remainder", "and", "or", "xor", "lshift", "rshift",
                 "pow", "atan2", "fmod", "max", "maximum", "min", "minimum", "logaddexp"):  # fmt: skip
        assert name in BINARY
    unary = "neg abs acos acosh asin asinh atan atanh ceil cos cosh erf exp expm1 floor log log10 log1p reciprocal"
    unary += " round rsqrt sign sin sinh sqrt square tan tanh trunc int torch.float torch.long torch.bool"
    for name in unary.split():
        assert name in UNARY


def test_expression_tensor_casts_and_lists_of_tensors(tmp_path):
    lines = ["pnnx.Input a 0 1 0", "pnnx.Expression e 1 1 0 1 expr=torch.long(mul(@0,2.6))",
             "pnnx.Expression f 1 1 0 2 expr=torch.bool(@0)", "pnnx.Output out 2 0 1 2"]  # fmt: skip
    m = ep.load(write_pnnx(tmp_path, "c", lines))
    a, b = m(ember.tensor([[0.0, 1.0, -1.0]]))
    assert str(a.dtype) == "ember.int64" and a.tolist() == [[0, 2, -2]]
    assert b.tolist() == [[False, True, True]]


@pytest.mark.parametrize(("expr", "match"), [("add(@0", "expected"), ("add(@0,@1,@2)", "takes 2"),
                                            ("@0)", "unexpected"), ("mul(@0,$)", "unexpected character")])  # fmt: skip
def test_bad_expressions_are_refused(expr, match):
    with pytest.raises(ep.PnnxFormatError, match=match):
        parse_expression(expr)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("n", [2, 3])
def test_meshgrid_converter_matches_torch(torch, indexing: str, n: int) -> None:
    from ember.pnnx._functional import FUNCTION_OPS

    lengths = (3, 4, 2)[:n]
    ref = torch.meshgrid(*[torch.arange(float(k)) for k in lengths], indexing=indexing)
    out = FUNCTION_OPS["torch.meshgrid"]([ember.arange(float(k)) for k in lengths], indexing=indexing)
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        np.testing.assert_array_equal(o.numpy(), r.numpy())
