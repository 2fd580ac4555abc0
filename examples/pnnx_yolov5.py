"""Detect objects with a YOLOv5 model exported by pnnx, through ``ember.pnnx`` (the API, not the CLI).

    python examples/pnnx_yolov5.py yolov5s.pnnx.param street.jpg [--out street_det.png]

Works with the raw 3-map head and with the decoded head. Without a model it exports a plain-torch
YOLOv5s (Focus stem, random weights) with the ``pnnx`` package (needs torch) and runs it on a synthetic
image; random weights find nothing real, so the threshold is lowered to show the whole pipeline.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

import ember
import ember.pnnx
from ember.pnnx._vision import (
    COCO_NAMES,
    decode_raw_maps,
    detections,
    draw_detections,
    letterbox,
    load_image,
    scale_boxes,
)


def demo_model(folder: Path) -> Path:
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "workloads"))
    from _pnnx_models import export, finish, models

    torch.manual_seed(0)
    net = models()["YOLO"]().eval()
    finish(export(net, torch.rand(1, 3, 320, 320), folder / "yolov5s.pt"), folder / "yolov5s_o2.pnnx.param")
    return folder / "yolov5s_o2.pnnx.param"


def main(argv: list[str] | None = None) -> np.ndarray:
    p = argparse.ArgumentParser(description="YOLOv5 detection through ember.pnnx")
    p.add_argument("model", nargs="?", type=Path, help="MODEL.pnnx.param (default: export a random YOLOv5s)")
    p.add_argument("image", nargs="?", type=Path, help="an image file (default: a synthetic one)")
    p.add_argument("--out", type=Path, default=Path("runs/pnnx-example/detections.png"), help="the PNG to write")
    p.add_argument("--conf", type=float, help="confidence threshold (default 0.25; 0.01 for the demo model)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        param = args.model or demo_model(Path(tmp))
        conf = args.conf if args.conf is not None else (0.25 if args.model else 0.01)
        if args.image is not None:
            image = load_image(args.image)
        else:
            image = (np.random.default_rng(0).random((240, 320, 3)) * 255).astype(np.uint8)

        model = ember.pnnx.load(param)
        inp = next(op for op in ember.pnnx.read_param(param).operators if op.type == "pnnx.Input")
        size = inp.shapes[inp.outputs[0]][0][2]  # the input size the model was exported with
        x, ratio, pad = letterbox(image, (size, size))  # keep the aspect ratio, pad with grey
        with ember.no_grad():
            outs = model(ember.tensor(x))
        outs = [o.numpy() for o in (outs if isinstance(outs, tuple) else (outs,))]
        decoded = [o for o in outs if o.ndim == 3]  # the decoded head: (1, N, 85)
        pred = decoded[0] if decoded else decode_raw_maps([o for o in outs if o.ndim == 4], (size, size))
        det = scale_boxes(detections(pred[0], conf=conf, iou=0.45), ratio, pad, image.shape)
    for x1, y1, x2, y2, score, c in det[:10].tolist():
        print(f"{COCO_NAMES[int(c)]:>12} {score:.3f}  [{x1:.0f}, {y1:.0f}, {x2:.0f}, {y2:.0f}]")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    draw_detections(image, det, COCO_NAMES, args.out)
    print(f"{len(det)} detections; wrote {args.out}")
    return det


if __name__ == "__main__":
    main()
