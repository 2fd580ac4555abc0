"""``ember pnnx info|run`` and the pre/post-processing behind it (letterbox, YOLOv5 decoding, NMS)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.pnnx as ep
from ember.cli import main
from ember.pnnx._vision import (
    classify_input,
    decode_raw_maps,
    detections,
    letterbox,
    nms,
    scale_boxes,
    top_k,
)

from .conftest import write_pnnx


def _greedy_nms(boxes, scores, thr):
    """The definition, one box at a time, in plain Python."""
    boxes = boxes.tolist()

    def iou(p, q):
        w = max(0.0, min(p[2], q[2]) - max(p[0], q[0]))
        h = max(0.0, min(p[3], q[3]) - max(p[1], q[1]))
        area = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1])
        return w * h / (area - w * h)

    keep: list[int] = []
    for i in sorted(range(len(boxes)), key=lambda i: -scores[i]):
        if all(iou(boxes[i], boxes[j]) <= thr for j in keep):
            keep.append(i)
    return keep


def test_nms_matches_the_greedy_definition():
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 100, (200, 2))
    boxes = np.concatenate((xy, xy + rng.uniform(5, 40, (200, 2))), 1)
    scores = rng.random(200)
    for thr in (0.3, 0.5, 0.7):
        assert nms(boxes, scores, thr).tolist() == _greedy_nms(boxes, scores, thr)


def test_detections_are_class_aware_and_thresholded():
    pred = np.array(
        [
            [50, 50, 20, 20, 0.9, 0.9, 0.1],  # class 0
            [51, 50, 20, 20, 0.8, 0.9, 0.1],  # overlaps the first, same class: suppressed
            [50, 51, 20, 20, 0.9, 0.1, 0.8],  # same place, class 1: kept
            [10, 10, 4, 4, 0.1, 0.9, 0.9],  # low objectness: dropped
        ],
        np.float32,
    )
    det = detections(pred, conf=0.25, iou=0.45)
    assert det[:, 5].tolist() == [0, 1]
    np.testing.assert_allclose(det[0, :5], [40, 40, 60, 60, 0.81], rtol=1e-5)


def test_letterbox_and_scale_boxes_invert_each_other():
    img = np.zeros((60, 120, 3), np.uint8)
    img[20:40, 30:60] = 255
    x, r, pad = letterbox(img, (64, 64))
    assert x.shape == (1, 3, 64, 64) and r == pytest.approx(64 / 120) and pad == (0, 16)
    assert x[0, 0, 0, 0] == pytest.approx(114 / 255)  # grey padding
    box = np.array([[30 * r, 20 * r + 16, 60 * r, 40 * r + 16, 0.9, 0]], np.float32)
    np.testing.assert_allclose(scale_boxes(box, r, pad, img.shape)[0, :4], [30, 20, 60, 40], atol=1e-4)


def test_classify_input_and_top_k():
    x = classify_input(np.full((300, 200, 3), 128, np.uint8), 32)
    assert x.shape == (1, 3, 32, 32) and x.dtype == np.float32
    np.testing.assert_allclose(x[0, :, 0, 0], (128 / 255 - np.array([0.485, 0.456, 0.406])) / [0.229, 0.224, 0.225],
                               rtol=1e-5)  # fmt: skip
    top = top_k(np.array([0.0, 3.0, 1.0, 2.0]), 3)
    assert [c for c, _ in top] == [1, 3, 2] and top[0][1] == pytest.approx(np.exp(3) / np.exp([0, 3, 1, 2]).sum())


def test_decoding_the_raw_maps_equals_the_decoded_head(exported):
    _, path, x = exported["yolo_o2"]
    out = ep.load(path)(ember.tensor(x.numpy()))
    decoded, maps = out[0].detach().numpy(), [o.detach().numpy() for o in out[1:]]
    np.testing.assert_allclose(decode_raw_maps(maps, (64, 64)), decoded, rtol=1e-4, atol=1e-4)


def test_info_lists_operators_and_unsupported_types(tmp_path, capsys):
    lines = ["pnnx.Input in0 0 1 0 #0=(1,3)f32", "nn.ReLU r 1 1 0 1", "nn.Frobnicate f 1 1 1 2", "nn.ReLU s 1 1 2 3",
             "pnnx.Output out 1 0 3"]  # fmt: skip
    p = write_pnnx(tmp_path, "u", lines)
    assert main(["pnnx", "info", str(p)]) == 0
    out = capsys.readouterr().out
    assert "5 operators, 4 operands" in out and "input pnnx_input_0" not in out and "input in0: (1,3)f32" in out
    assert "nn.ReLU" in out and "2  supported" in out
    assert "nn.Frobnicate" in out and "NOT SUPPORTED" in out and "1 operator type(s) not supported" in out
    assert main(["pnnx", "run", str(p), "--image", str(tmp_path / "none.png")]) == 1
    assert "unsupported PNNX operator 'nn.Frobnicate'" in capsys.readouterr().err


def _image(tmp_path):
    from PIL import Image

    path = tmp_path / "img.png"
    Image.fromarray((np.random.default_rng(0).random((48, 80, 3)) * 255).astype(np.uint8)).save(path)
    return path


def test_run_classifier_prints_top5(exported, tmp_path, capsys):
    pytest.importorskip("PIL")
    assert main(["pnnx", "run", str(exported["resnet_o2"][1]), "--image", str(_image(tmp_path))]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(".")[0] for line in out[1:]] == ["1", "2", "3", "4", "5"]
    assert sum(float(line.split()[-1]) for line in out[1:]) <= 1.0


@pytest.mark.parametrize("key", ["yolo_o2", "yolo_raw_o2"])
def test_run_detector_writes_a_png_with_boxes(exported, tmp_path, capsys, key):
    from PIL import Image

    img = _image(tmp_path)
    out = tmp_path / "det.png"
    assert main(["pnnx", "run", str(exported[key][1]), "--image", str(img), "--out", str(out), "--conf", "0.05"]) == 0
    text = capsys.readouterr().out
    n = int(text.strip().splitlines()[-1].split()[0])
    assert n > 0 and f"wrote {out}" in text
    with Image.open(out) as im:
        assert im.format == "PNG" and im.size == (80, 48)
        drawn = np.asarray(im.convert("RGB")).astype(int)
    with Image.open(img) as im:
        assert np.abs(drawn - np.asarray(im)).sum() > 0  # boxes were drawn
