"""``ember onnx info MODEL.onnx`` and ``ember onnx run MODEL.onnx --input NAME=FILE.npy ...``."""

from __future__ import annotations

import argparse
import math
import re
import time
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "main", "support"]


def add_parser(sub: Any) -> None:
    """Add the ``onnx`` command (with ``info`` and ``run``) to the ``ember`` parser's sub-commands."""
    p = sub.add_parser("onnx", help="inspect or run an ONNX model (.onnx)",
                       description="Inspect or run an ONNX model with Ember.")  # fmt: skip
    psub = p.add_subparsers(dest="onnx_command", metavar="ACTION", required=True)
    i = psub.add_parser("info", help="inputs, outputs, opset, operator counts and which Ember supports")
    i.add_argument("model", type=Path, metavar="MODEL.onnx")
    r = psub.add_parser("run", help="run the model on .npy inputs; save the outputs as .npy")
    r.add_argument("model", type=Path, metavar="MODEL.onnx")
    r.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="a graph input and the .npy file holding it (repeat for each input)")  # fmt: skip
    r.add_argument("--out", type=Path, default=Path("."), help="folder for the outputs' .npy files (default: .)")


def main(args: argparse.Namespace) -> int:
    import sys

    from ._proto import INSTALL_HINT

    try:
        return _info(args) if args.onnx_command == "info" else _run(args)
    except ImportError:
        print(f"ember: {INSTALL_HINT}", file=sys.stderr)
        return 1


def support(model: Any) -> dict[str, str]:
    """Per operator type of the main graph: ``converter``, ``function`` (expanded ONNX function) or ``missing``."""
    from onnx.defs import SchemaError, get_schema

    from ._ops import CONTROL, DOMAIN_OPS, OPS, STRUCTURAL

    opsets = {(o.domain or ""): o.version for o in model.opset_import}
    local = {(f.domain, f.name) for f in model.functions}
    out: dict[str, str] = {}
    for n in model.graph.node:
        domain = "" if n.domain in ("", "ai.onnx") else n.domain
        key = f"{domain}:{n.op_type}" if domain else n.op_type
        if key in out:
            continue
        if (n.domain, n.op_type) in local:
            out[key] = "function"
        elif (not domain and (n.op_type in OPS or n.op_type in CONTROL or n.op_type in STRUCTURAL)) or (
            n.op_type in DOMAIN_OPS.get(domain, {})
        ):
            out[key] = "converter"
        else:
            try:
                schema: Any = get_schema(n.op_type, opsets.get(domain, 1), domain)
                ok = schema.has_function or schema.has_context_dependent_function
            except SchemaError:
                ok = False
            out[key] = "function" if ok else "missing"
    return out


def _type(vi: Any) -> str:
    from ._dtypes import ONNX_NAMES

    t = vi.type
    if not t.HasField("tensor_type"):
        return t.WhichOneof("value") or "?"
    tt = t.tensor_type
    dims = ",".join(d.dim_param or str(d.dim_value) if (d.dim_param or d.HasField("dim_value")) else "?"
                    for d in tt.shape.dim)  # fmt: skip
    return f"({dims}) {ONNX_NAMES.get(tt.elem_type, str(tt.elem_type)).lower()}"


def _info(args: argparse.Namespace) -> int:
    from . import operator_counts
    from ._proto import read_model

    model, label = read_model(args.model)
    g = model.graph
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in model.opset_import)
    producer = f", produced by {model.producer_name} {model.producer_version}".rstrip() if model.producer_name else ""
    print(f"{label}: IR version {model.ir_version}, opsets: {opsets}{producer}")
    inits = {t.name for t in g.initializer}
    params = sum(math.prod(t.dims) for t in g.initializer)
    print(f"  {len(g.node)} nodes, {len(g.initializer)} initializers ({params:,} values)")
    for vi in g.input:
        if vi.name not in inits:
            print(f"  input  {vi.name}: {_type(vi)}")
    for vi in g.output:
        print(f"  output {vi.name}: {_type(vi)}")
    counts = operator_counts(model)
    how = support(model)
    width = max(map(len, counts), default=8)
    for op, n in counts.items():
        state = {"converter": "supported", "function": "supported (ONNX function)", "missing": "NOT SUPPORTED"}
        print(f"  {op:<{width}}  {n:>4}  {state[how[op]]}")
    missing = [op for op in counts if how[op] == "missing"]
    if missing:
        print(f"{len(missing)} operator type(s) not supported: {', '.join(missing)}")
    else:
        print("all operator types supported")
    return 0


def _run(args: argparse.Namespace) -> int:
    import numpy as np

    import ember

    from . import load

    feeds: dict[str, Any] = {}
    for item in args.input:
        name, eq, file = item.partition("=")
        if not eq or not name or not file:
            raise ValueError(f"--input {item!r}: expected NAME=FILE.npy")
        try:
            arr = np.load(file, allow_pickle=False)  # a plain array file: nothing in it is executed
        except (OSError, ValueError) as e:
            raise ValueError(f"--input {name}: cannot read {file} as a .npy array: {e}") from None
        feeds[name] = ember.as_tensor(np.ascontiguousarray(arr) if arr.ndim else np.array(arr))  # default device
    t0 = time.perf_counter()
    model = load(args.model)
    t1 = time.perf_counter()
    missing = [n for n in model.input_names if n not in feeds]
    unknown = [n for n in feeds if n not in model.input_names]
    if missing or unknown:
        raise ValueError(f"{args.model}: the model's inputs are {model.input_names}; missing {missing}, "
                         f"unknown {unknown} (give each with --input NAME=FILE.npy)")  # fmt: skip
    with ember.no_grad():
        t2 = time.perf_counter()
        outs = model.run(feeds)
        t3 = time.perf_counter()
    print(f"{args.model.name}: loaded in {t1 - t0:.3f} s, ran in {1000 * (t3 - t2):.1f} ms")
    args.out.mkdir(parents=True, exist_ok=True)
    for name, value in outs.items():
        path = args.out / (re.sub(r"[^\w.-]", "_", name) + ".npy")
        if isinstance(value, list):
            print(f"  {name}: a sequence of {len(value)} tensors (not saved)")
            continue
        arr = value.detach().numpy()
        np.save(path, arr)
        numeric = arr.size and arr.dtype.kind in "fiub"
        stats = f"min {arr.min():.4g}, max {arr.max():.4g}, mean {arr.mean():.4g}" if numeric else ""
        print(f"  {name}: {tuple(arr.shape)} {arr.dtype}  {stats}  -> {path}")
    return 0
