"""``ember pnnx run MODEL.pnnx.param --image IMG`` and ``ember pnnx info MODEL.pnnx.param``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from .._argtypes import number_arg as _number
from . import is_supported, load, operator_counts, read_param
from ._vision import (
    COCO_NAMES,
    as_numpy,
    classify_input,
    decode_raw_maps,
    detections,
    draw_detections,
    letterbox,
    load_image,
    scale_boxes,
    top_k,
)

__all__ = ["add_parser", "main"]


def add_parser(sub: Any) -> None:
    """Add the ``pnnx`` command (with ``run`` and ``info``) to the ``ember`` parser's sub-commands."""
    p = sub.add_parser("pnnx", help="run or inspect a PNNX model (.pnnx.param + .pnnx.bin)",
                       description="Run or inspect a model exported by ncnn's pnnx converter.")  # fmt: skip
    psub = p.add_subparsers(dest="pnnx_command", metavar="ACTION", required=True)
    r = psub.add_parser("run", help="classify an image (top-5) or detect objects (YOLOv5: PNG with boxes)")
    r.add_argument("model", type=Path, metavar="MODEL.pnnx.param")
    r.add_argument("--image", type=Path, required=True, help="input image (any format Pillow reads)")
    r.add_argument("--bin", type=Path, help="weights file (default: MODEL.pnnx.bin)")
    r.add_argument("--task", choices=("auto", "classify", "detect"), default="auto",
                   help="what the model does (default: from its outputs)")  # fmt: skip
    r.add_argument("--size", type=_number(int, 1), help="input size (default: the model's traced input size)")
    r.add_argument("--out", type=Path, help="detection: the PNG to write (default: IMAGE_det.png)")
    r.add_argument(
        "--conf", type=_number(float, 0), default=0.25, help="detection: confidence threshold (default 0.25)"
    )
    r.add_argument("--iou", type=_number(float, 0), default=0.45, help="detection: NMS IoU threshold (default 0.45)")
    r.add_argument("--labels", type=Path, help="a text file with one class name per line")
    r.add_argument(
        "--topk", type=_number(int, 1), default=5, help="classification: how many classes to print (default 5)"
    )
    i = psub.add_parser("info", help="list the graph's operators, their counts and which Ember supports")
    i.add_argument("model", type=Path, metavar="MODEL.pnnx.param")


def main(args: argparse.Namespace) -> int:
    return _info(args) if args.pnnx_command == "info" else _run(args)


def _info(args: argparse.Namespace) -> int:
    g = read_param(args.model)
    counts = operator_counts(g)
    print(f"{args.model}: {len(g.operators)} operators, {g.operand_count} operands")
    for op in g.operators:
        if op.type in ("pnnx.Input", "pnnx.Output"):
            shapes = [op.shapes.get(n) for n in op.outputs + op.inputs]
            desc = ", ".join(f"({','.join(map(str, s[0]))}){s[1]}" for s in shapes if s) or "shape not recorded"
            print(f"  {op.type.removeprefix('pnnx.').lower()} {op.name}: {desc}")
    width = max(map(len, counts))
    missing = [t for t in counts if not is_supported(t)]
    for t, n in counts.items():
        print(f"  {t:<{width}}  {n:>4}  {'supported' if t not in missing else 'NOT SUPPORTED'}")
    if missing:
        print(f"{len(missing)} operator type(s) not supported: {', '.join(missing)}")
    else:
        print("all operator types supported")
    return 0


def _input_hw(graph_shape: tuple[int, ...] | None, size: int | None) -> tuple[int, int]:
    """The image size to feed: ``--size``, else the traced input's, else 224; refused when it cannot fit in memory."""
    if size is not None:
        hw, source = (size, size), f"--size {size}"
    elif graph_shape and len(graph_shape) == 4 and min(graph_shape[2:]) > 0:
        hw, source = (graph_shape[2], graph_shape[3]), f"the model's traced input {tuple(graph_shape)}"
    else:
        return 224, 224
    need, have = 3 * hw[0] * hw[1] * 4, _memory_bytes()
    if need > have:
        raise ValueError(f"input size {hw[0]}x{hw[1]} (from {source}) needs {need / 2**30:.1f} GiB for the image "
                         f"alone, more than this machine's {have / 2**30:.1f} GiB; pass a smaller --size")  # fmt: skip
    return hw


def _memory_bytes() -> int:
    """Physical memory (or 64 GiB where the system does not say)."""
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 64 * 2**30


def _labels(path: Path | None, default: list[str]) -> list[str]:
    if path is None:
        return default
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _run(args: argparse.Namespace) -> int:
    import ember

    graph = read_param(args.model)
    inputs = [op for op in graph.operators if op.type == "pnnx.Input"]
    if len(inputs) != 1:
        print(f"ember pnnx run: the model takes {len(inputs)} inputs; run handles single-image models",
              file=sys.stderr)  # fmt: skip
        return 2
    traced = inputs[0].shapes.get(inputs[0].outputs[0])
    hw = _input_hw(traced[0] if traced else None, args.size)
    t0 = time.perf_counter()
    model = load(args.model, args.bin)
    t1 = time.perf_counter()
    img = load_image(args.image)
    task = args.task
    if task == "auto":
        task = _guess_task(graph)
    if task == "classify":
        x = classify_input(img, hw[0])
    else:
        x, ratio, pad = letterbox(img, hw)
    with ember.no_grad():
        t2 = time.perf_counter()
        out = model(ember.tensor(x, device=_device_of(model)))
        t3 = time.perf_counter()
    outs = [as_numpy(o) for o in (out if isinstance(out, tuple) else (out,))]
    print(f"{args.model.name}: loaded in {t1 - t0:.3f} s, inference {1000 * (t3 - t2):.1f} ms on {tuple(x.shape)}")
    if task == "classify":
        names = _labels(args.labels, [])
        for rank, (c, p) in enumerate(top_k(outs[0][0], args.topk), 1):
            name = names[c] if c < len(names) else f"class {c}"
            print(f"{rank}. {name}  {p:.4f}")
        return 0
    decoded = [o for o in outs if o.ndim == 3]
    pred = decoded[0] if decoded else decode_raw_maps([o for o in outs if o.ndim == 4], hw)
    det = scale_boxes(detections(pred[0], args.conf, args.iou), ratio, pad, img.shape)
    names = _labels(args.labels, COCO_NAMES if pred.shape[-1] == 85 else [])
    out_path = args.out or args.image.with_name(args.image.stem + "_det.png")
    draw_detections(img, det, names, out_path)
    for x1, y1, x2, y2, score, c in det.tolist():
        name = names[int(c)] if int(c) < len(names) else f"class{int(c)}"
        print(f"{name} {score:.3f} [{x1:.0f}, {y1:.0f}, {x2:.0f}, {y2:.0f}]")
    print(f"{len(det)} detection(s); wrote {out_path}")
    return 0


def _guess_task(graph: Any) -> str:
    """``detect`` for a YOLO-like output (3-d predictions or 4-d maps), ``classify`` for (N, classes)."""
    out = [op for op in graph.operators if op.type == "pnnx.Output"]
    shapes = [s[0] for op in out for n in op.inputs if (s := op.shapes.get(n))]
    producers = {o: op for op in graph.operators for o in op.outputs}
    for op in out:
        for n in op.inputs:
            p = producers.get(n)
            if p is not None and p.type in ("prim::TupleConstruct", "prim::ListConstruct"):
                shapes += [s[0] for m in p.inputs if (s := p.shapes.get(m))]
    if shapes and all(len(s) == 2 for s in shapes):
        return "classify"
    return "detect" if any(len(s) in (3, 4) for s in shapes) else "classify"


def _device_of(model: Any) -> Any:
    """Where the model's weights are (the input goes there); the default device for a weightless graph."""
    for p in model.parameters():
        return p.device
    from .._device import get_default_device

    return get_default_device()
