"""Records: save and load a ResNet-50-sized model with each recorder, next to torch.save/load and safetensors.

Throughput in MB/s of float32 parameters (higher is better); the ratio column compares with safetensors'
own save/load of the same arrays (the issue's aim: the default recorder within 1.5x of it).
"""

from __future__ import annotations

import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from _common import torch_or_none

import ember
from ember.models import ResNetConfig
from ember.record import JsonGzRecorder, NamedMpkGzRecorder, NamedMpkRecorder, SafetensorsRecorder


def timed(fn: object, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    torch = torch_or_none()
    ember.manual_seed(0)
    model = ResNetConfig(50).init()
    rec = model.into_record()
    mb = sum(p.numel() * 4 for p in model.state_dict().values()) / 1e6
    arrays = {k: v.numpy() for k, v in model.state_dict().items()}
    rows = []
    with tempfile.TemporaryDirectory() as d:
        base = pathlib.Path(d)
        from safetensors.numpy import load_file, save_file

        st_save = timed(lambda: save_file(arrays, str(base / "ref.safetensors")))
        st_load = timed(lambda: load_file(str(base / "ref.safetensors")))
        rows.append(("safetensors (library)", mb / st_save, mb / st_load))

        def st_durable() -> None:  # the same bytes written the way Ember writes: temp file, fsync, rename
            from safetensors.numpy import save

            from ember.record import atomic_write

            atomic_write(base / "ref2.safetensors", save(arrays))

        rows.append(("safetensors + atomic fsync", mb / timed(st_durable), float("nan")))
        for rc, repeat in ((NamedMpkRecorder(), 3), (NamedMpkGzRecorder(), 1), (JsonGzRecorder(), 1),
                           (SafetensorsRecorder(), 3)):  # fmt: skip
            path = base / f"m{rc.extension}"
            save = timed(lambda rc=rc, path=path: rc.save(rec, path, "full"), repeat)
            load = timed(lambda rc=rc, path=path: rc.load(path), repeat)
            rows.append((f"ember {rc.name}", mb / save, mb / load))
        if torch is not None:
            sd = {k: torch.from_numpy(v) for k, v in arrays.items()}
            save = timed(lambda: torch.save(sd, base / "m.pt"))
            load = timed(lambda: torch.load(base / "m.pt", weights_only=True))
            rows.append(("torch.save / torch.load", mb / save, mb / load))
        print(f"ResNet-50: {mb:.0f} MB of float32 parameters")
        print(f"{'format':28s} {'save MB/s':>10s} {'load MB/s':>10s} {'save vs st':>11s} {'load vs st':>11s}")
        ref_s, ref_l = rows[0][1], rows[0][2]
        for name, s, lo in rows:
            print(f"{name:28s} {s:10.0f} {lo:10.0f} {s / ref_s:11.2f} {lo / ref_l:11.2f}")
        # cold start of inference: build + first forward
        cfg = ResNetConfig(50)
        x = ember.randn(1, 3, 224, 224)
        path = base / "m.mpk"
        t0 = time.perf_counter()
        m = cfg.init()
        m.load(path)
        m.eval()(x)
        slow = time.perf_counter() - t0
        t0 = time.perf_counter()
        m = cfg.init_with(NamedMpkRecorder().load(path))
        m.eval()(x)
        fast = time.perf_counter() - t0
        print(f"cold start (build + load + first forward): init()+load {slow:.2f}s, init_with {fast:.2f}s "
              f"({slow / fast:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
