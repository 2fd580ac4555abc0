"""Detect objects with a YOLOv5 model exported by pnnx, through ``ember.pnnx`` (the API, not the CLI).

    python examples/pnnx_yolov5.py yolov5s.pnnx.param street.jpg [out.png]

Works with the raw 3-map head and with the decoded head. Without arguments it exports a plain-torch
YOLOv5s (Focus stem, random weights) with the ``pnnx`` package (needs torch) and runs it on a synthetic
image; random weights find nothing real, so the thresholds are lowered to show the pipeline.
"""

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


with tempfile.TemporaryDirectory() as tmp:
    if len(sys.argv) >= 3:
        param, image, conf = Path(sys.argv[1]), load_image(sys.argv[2]), 0.25
        out = Path(sys.argv[3]) if len(sys.argv) > 3 else Path(sys.argv[2]).with_suffix(".det.png")
    else:
        param, conf, out = demo_model(Path(tmp)), 0.01, Path("runs/pnnx-example/yolov5_demo.png")
        out.parent.mkdir(parents=True, exist_ok=True)
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
    draw_detections(image, det, COCO_NAMES, out)
    print(f"{len(det)} detections; wrote {out}")
