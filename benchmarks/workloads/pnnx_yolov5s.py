"""YOLOv5s (640x640, batch 1, decoded head): ember.pnnx (pnnx export) vs PyTorch eager, same model, ms/batch."""

from _harness import parse, report
from _pnnx_bench import step_for

NAME = "pnnx_yolov5s"

if __name__ == "__main__":
    args = parse(NAME)
    report(NAME, args, step_for(args, "yolov5s", batch=1), unit="ms", per_step=1)
