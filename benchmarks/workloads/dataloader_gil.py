"""DataLoader over a dataset whose __getitem__ is Python work (holds the GIL): 2 worker processes, samples/s.

Each sample costs about 10000 Python additions (about 0.5 ms) and returns a (3, 32, 32) float32 image and an int label;
batches of 32, one epoch of 256 samples per step, persistent "fork" workers in both frameworks (PyTorch's
default worker processes; Ember's ``multiprocessing_context="fork"``). ``EMBER_LOADER_THREADS=1`` runs
Ember's default worker threads instead, to show what the processes buy.
"""

import os

import numpy as np
from _harness import framework, parse, report

N, BATCH, WORKERS = 256, 32, 2


class GilDataset:
    def __len__(self) -> int:
        return N

    def __getitem__(self, i: int) -> tuple[np.ndarray, int]:
        s = 0
        for k in range(10000):
            s += k * i
        return np.full((3, 32, 32), (s % 7) / 7, np.float32), i % 10


if __name__ == "__main__":
    args = parse("dataloader_gil")
    lib = framework(args)
    if args.framework == "torch":
        from torch.utils.data import DataLoader, Dataset

        class TorchDataset(GilDataset, Dataset):  # type: ignore[misc]
            pass

        loader = DataLoader(TorchDataset(), batch_size=BATCH, num_workers=WORKERS, persistent_workers=True,
                            multiprocessing_context="fork")  # fmt: skip
    else:
        from ember.data import DataLoader

        ctx = None if os.environ.get("EMBER_LOADER_THREADS") else "fork"
        loader = DataLoader(GilDataset(), batch_size=BATCH, num_workers=WORKERS, persistent_workers=True,
                            multiprocessing_context=ctx)  # fmt: skip

    def step() -> None:
        total = 0.0
        for x, _ in loader:
            total += float(x[0, 0, 0, 0])

    report("dataloader_gil", args, step, unit="samples/s", per_step=N)
    os._exit(0)  # skip the workers' orderly shutdown in both frameworks (not part of the measurement)
