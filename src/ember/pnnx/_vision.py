"""Pre- and post-processing for the PNNX applications: image loading, classification, YOLOv5 decoding and NMS.

This is application code on host images (like a data transform): arrays are NumPy, images go through
Pillow, and every step is vectorised over boxes (NMS loops once per *kept* box, each pass vectorised).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require

__all__ = [
    "COCO_NAMES", "YOLOV5_ANCHORS", "load_image", "classify_input", "letterbox", "decode_raw_maps",
    "detections", "nms", "scale_boxes", "draw_detections", "top_k",
]  # fmt: skip

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)

#: YOLOv5's default anchors (pixels) for the stride-8, -16 and -32 maps.
YOLOV5_ANCHORS = np.array(
    [[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119], [116, 90, 156, 198, 373, 326]], np.float32
).reshape(3, 3, 2)

COCO_NAMES = [
    "person",
    "bicycle",
    "car",
    "motorcycle",
    "airplane",
    "bus",
    "train",
    "truck",
    "boat",
    "traffic_light",
    "fire_hydrant",
    "stop_sign",
    "parking_meter",
    "bench",
    "bird",
    "cat",
    "dog",
    "horse",
    "sheep",
    "cow",
    "elephant",
    "bear",
    "zebra",
    "giraffe",
    "backpack",
    "umbrella",
    "handbag",
    "tie",
    "suitcase",
    "frisbee",
    "skis",
    "snowboard",
    "sports_ball",
    "kite",
    "baseball_bat",
    "baseball_glove",
    "skateboard",
    "surfboard",
    "tennis_racket",
    "bottle",
    "wine_glass",
    "cup",
    "fork",
    "knife",
    "spoon",
    "bowl",
    "banana",
    "apple",
    "sandwich",
    "orange",
    "broccoli",
    "carrot",
    "hot_dog",
    "pizza",
    "donut",
    "cake",
    "chair",
    "couch",
    "potted_plant",
    "bed",
    "dining_table",
    "toilet",
    "tv",
    "laptop",
    "mouse",
    "remote",
    "keyboard",
    "cell_phone",
    "microwave",
    "oven",
    "toaster",
    "sink",
    "refrigerator",
    "book",
    "clock",
    "vase",
    "scissors",
    "teddy_bear",
    "hair_drier",
    "toothbrush",
]


def load_image(path: str | Path) -> np.ndarray:
    """An image file as an (H, W, 3) uint8 RGB array."""
    Image = require("PIL.Image", "reading an image")

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def _resize(img: np.ndarray, w: int, h: int) -> np.ndarray:
    Image = require("PIL.Image", "resizing an image")

    return np.asarray(Image.fromarray(img).resize((w, h), Image.Resampling.BILINEAR))


def classify_input(img: np.ndarray, size: int = 224) -> np.ndarray:
    """ImageNet preprocessing: shorter side to ``size * 8/7``, centre crop ``size``, normalise; (1, 3, s, s)."""
    h, w = img.shape[:2]
    short = round(size * 256 / 224)
    scale = short / min(h, w)
    nh, nw = max(size, round(h * scale)), max(size, round(w * scale))
    img = _resize(img, nw, nh)
    top, left = (nh - size) // 2, (nw - size) // 2
    crop = img[top : top + size, left : left + size].astype(np.float32) / 255.0
    return ((crop - IMAGENET_MEAN) / IMAGENET_STD).transpose(2, 0, 1)[None].astype(np.float32)


def top_k(logits: np.ndarray, k: int = 5) -> list[tuple[int, float]]:
    """The ``k`` most probable classes of one logit vector, with softmax probabilities."""
    z = logits.reshape(-1).astype(np.float64)
    p = np.exp(z - z.max())
    p /= p.sum()
    idx = np.argsort(-p, kind="stable")[:k]
    return [(int(i), float(p[i])) for i in idx]


def letterbox(img: np.ndarray, size: tuple[int, int], color: int = 114) -> tuple[np.ndarray, float, tuple[int, int]]:
    """Resize keeping the aspect ratio and pad to ``size`` (h, w), YOLOv5 style.

    Returns the (1, 3, h, w) float32 input in [0, 1], the scale ratio and the (left, top) padding.
    """
    h0, w0 = img.shape[:2]
    th, tw = size
    r = min(th / h0, tw / w0)
    nw, nh = round(w0 * r), round(h0 * r)
    left, top = (tw - nw) // 2, (th - nh) // 2
    out = np.full((th, tw, 3), color, np.uint8)
    out[top : top + nh, left : left + nw] = _resize(img, nw, nh) if (nw, nh) != (w0, h0) else img
    return (out.astype(np.float32) / 255.0).transpose(2, 0, 1)[None].copy(), r, (left, top)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def decode_raw_maps(maps: Sequence[np.ndarray], input_hw: tuple[int, int], anchors: np.ndarray = YOLOV5_ANCHORS
                    ) -> np.ndarray:  # fmt: skip
    """YOLOv5's raw head (maps of shape (B, na*no, ny, nx)) -> (B, N, no) boxes ``cx, cy, w, h, obj, classes``.

    The stride of each map is the input size over the map size; anchors are matched to maps by stride.
    """
    maps = sorted(maps, key=lambda m: -m.shape[-1])  # largest map = smallest stride first
    out = []
    for i, m in enumerate(maps):
        b, c, ny, nx = m.shape
        na = anchors.shape[1]
        no = c // na
        stride = input_hw[0] / ny
        p = _sigmoid(m.reshape(b, na, no, ny, nx).transpose(0, 1, 3, 4, 2).astype(np.float32))
        yv, xv = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
        grid = np.stack((xv, yv), -1)[None, None].astype(np.float32)
        xy = (p[..., :2] * 2 - 0.5 + grid) * stride
        wh = (p[..., 2:4] * 2) ** 2 * anchors[min(i, len(anchors) - 1)].reshape(1, na, 1, 1, 2)
        out.append(np.concatenate((xy, wh, p[..., 4:]), -1).reshape(b, -1, no))
    return np.concatenate(out, 1)


def _xyxy(cxcywh: np.ndarray) -> np.ndarray:
    c, half = cxcywh[:, :2], cxcywh[:, 2:4] / 2
    return np.concatenate((c - half, c + half), 1)


def nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Greedy non-maximum suppression over (N, 4) xyxy boxes; indices kept, best first.

    One pass per kept box, each vectorised over all remaining boxes.
    """
    order = np.argsort(-scores, kind="stable")
    boxes = boxes[order]
    area = (boxes[:, 2] - boxes[:, 0]).clip(0) * (boxes[:, 3] - boxes[:, 1]).clip(0)
    alive = np.ones(len(boxes), bool)
    keep = []
    for i in range(len(boxes)):
        if not alive[i]:
            continue
        keep.append(i)
        rest = np.nonzero(alive[i + 1 :])[0] + i + 1
        if rest.size == 0:
            break
        lt = np.maximum(boxes[i, :2], boxes[rest, :2])
        rb = np.minimum(boxes[i, 2:], boxes[rest, 2:])
        inter = (rb - lt).clip(0).prod(1)
        iou = inter / (area[i] + area[rest] - inter + 1e-9)
        alive[rest[iou > iou_threshold]] = False
    return order[np.array(keep, dtype=np.int64)]


def detections(pred: np.ndarray, conf: float = 0.25, iou: float = 0.45, max_det: int = 300) -> np.ndarray:
    """One image's decoded predictions (N, 5 + nc) -> (K, 6) ``x1, y1, x2, y2, score, class``, class-aware NMS."""
    scores = pred[:, 4:5] * pred[:, 5:] if pred.shape[1] > 5 else pred[:, 4:5]
    cls = scores.argmax(1)
    best = scores[np.arange(len(scores)), cls]
    m = (best > conf) & (pred[:, 4] > conf)
    boxes, best, cls = _xyxy(pred[m, :4]), best[m], cls[m]
    if len(boxes) == 0:
        return np.zeros((0, 6), np.float32)
    offset = cls[:, None].astype(np.float32) * 7680.0  # boxes of different classes never overlap
    keep = nms(boxes + offset, best, iou)[:max_det]
    return np.concatenate((boxes[keep], best[keep, None], cls[keep, None].astype(np.float32)), 1)


def scale_boxes(det: np.ndarray, ratio: float, pad: tuple[int, int], shape: tuple[int, ...]) -> np.ndarray:
    """Boxes from letterboxed-input pixels back to the original image's, clipped to it."""
    out = det.copy()
    out[:, [0, 2]] = ((out[:, [0, 2]] - pad[0]) / ratio).clip(0, shape[1])
    out[:, [1, 3]] = ((out[:, [1, 3]] - pad[1]) / ratio).clip(0, shape[0])
    return out


def draw_detections(img: np.ndarray, det: np.ndarray, names: Sequence[str], path: str | Path) -> None:
    """Write ``img`` with boxes and ``name score`` labels drawn, as a PNG."""
    Image = require("PIL.Image", "drawing detections")
    ImageDraw = require("PIL.ImageDraw", "drawing detections")

    im = Image.fromarray(img)
    d = ImageDraw.Draw(im)
    palette = [(255, 56, 56), (72, 249, 10), (0, 194, 255), (255, 157, 151), (146, 204, 23), (52, 69, 147)]
    for x1, y1, x2, y2, score, c in det.tolist():
        color = palette[int(c) % len(palette)]
        label = f"{_name(names, int(c))} {score:.2f}"
        d.rectangle((x1, y1, x2, y2), outline=color, width=2)
        tb = d.textbbox((x1, y1), label)
        top = max(0.0, y1 - (tb[3] - tb[1]) - 2)
        d.rectangle((x1, top, x1 + (tb[2] - tb[0]) + 2, top + (tb[3] - tb[1]) + 2), fill=color)
        d.text((x1 + 1, top), label, fill=(255, 255, 255))
    im.save(path, format="PNG")


def _name(names: Sequence[str], i: int) -> str:
    return names[i] if 0 <= i < len(names) else f"class{i}"


def as_numpy(x: Any) -> np.ndarray:
    """An Ember tensor's values on the host."""
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)
