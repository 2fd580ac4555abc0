"""Full-size check of ember.pnnx: ResNet-18 (224x224) and YOLOv5s (640x640) exported by pnnx vs torch.

    python benchmarks/pnnx_fullsize_check.py [--batch 2] [--loads 5]

Builds the plain-torch models (seeded random weights, BatchNorm statistics randomised so that folding is
really exercised), exports each with the ``pnnx`` converter at optlevel 2 and 1, runs the exports through
``ember.pnnx`` and prints, per output, the largest absolute error, the largest error relative to
``1e-4 + 1e-4 * |torch|`` (pass when <= 1) and the median load time (parse + weights). Needs torch and
the ``pnnx`` package; not part of the test-suite (it takes about a minute).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent / "workloads"))


def main() -> int:
    import torch
    from _pnnx_models import export, finish, models, randomise_bn

    import ember
    import ember.pnnx

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=2, help="batch size of the comparison (exported at 1)")
    p.add_argument("--loads", type=int, default=5, help="how many timed loads")
    args = p.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for kind, shape in (("resnet18", (3, 224, 224)), ("yolov5s", (3, 640, 640))):
            torch.manual_seed(0)
            net = randomise_bn(models()["ResNet" if kind == "resnet18" else "YOLO"]())
            x1 = torch.rand(1, *shape)
            procs = [(level, export(net, x1, d / f"{kind}.pt", level, trace=level == 2)) for level in (2, 1)]
            x = torch.rand(args.batch, *shape)
            with torch.no_grad():
                ref = net(x)
            ref = ref if isinstance(ref, tuple) else (ref,)
            for level, proc in procs:
                param = d / f"{kind}_o{level}.pnnx.param"
                finish(proc, param)
                times = []
                for _ in range(args.loads):
                    t0 = time.perf_counter()
                    m = ember.pnnx.load(param)
                    times.append(time.perf_counter() - t0)
                with ember.no_grad():
                    got = m(ember.tensor(x.numpy()))
                got = got if isinstance(got, tuple) else (got,)
                for i, (g, r) in enumerate(zip(got, ref)):
                    g, r = g.numpy(), r.numpy()
                    err = np.abs(g - r)
                    worst = float((err / (1e-4 + 1e-4 * np.abs(r))).max())
                    ok &= worst <= 1.0 and g.shape == r.shape
                    print(f"{kind} optlevel={level} output {i} {tuple(g.shape)}: max abs err {err.max():.3e}, "
                          f"max err/(1e-4 + 1e-4|torch|) {worst:.3f}, max |torch| {np.abs(r).max():.3g}")  # fmt: skip
                print(f"{kind} optlevel={level}: load (parse + weights) median {statistics.median(times) * 1e3:.1f} ms"
                      f" (min {min(times) * 1e3:.1f}, max {max(times) * 1e3:.1f}; {args.loads} loads)")  # fmt: skip
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
