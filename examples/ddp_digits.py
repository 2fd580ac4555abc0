"""Data-parallel training on scikit-learn's 8x8 digits, one process per CPU core (or GPU), started by torchrun:

    torchrun --nproc_per_node=2 examples/ddp_digits.py --epochs 10
    torchrun --nproc_per_node=2 examples/ddp_digits.py --epochs 12 --resume    # continues from the checkpoint

On two machines, run on each (node_rank 0 and 1; the endpoint is machine 0's address and a free port):

    torchrun --nnodes=2 --nproc_per_node=2 --node_rank=0 --rdzv-backend=c10d --rdzv-endpoint=HOST:29400 \
        examples/ddp_digits.py

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; ``init_process_group()`` reads them.
Each process trains on GPU ``cuda:LOCAL_RANK`` with NCCL when the machine has a GPU per process, else on the
CPU with gloo (``--device`` chooses; NCCL refuses two processes on one GPU, and two torchrun "nodes" on one
machine cannot tell that they share its GPUs: pass ``--device cpu`` there).
In the group the Learner trains the model with DistributedDataParallel (gradients averaged across processes
while backward runs), gives each process its share of the data (DistributedSampler, reshuffled each epoch),
combines the metrics of all processes, and only rank 0 prints, logs and writes checkpoints. With
``--max-restarts=1`` torchrun restarts the processes after a failure and ``--resume`` continues the run.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.data import DataLoader, TensorDataset, digits
from ember.optim import Adam
from ember.train import Callback, Learner


def make_model() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def pick_device(choice: str) -> str:
    """``cuda:LOCAL_RANK`` for "cuda", or for "auto" when this machine has a GPU per local process; else "cpu"."""
    local_rank, local_world = int(os.environ.get("LOCAL_RANK", "0")), int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    if choice == "auto":
        choice = "cuda" if ember.cuda.is_available() and ember.cuda.device_count() >= local_world else "cpu"
    return f"cuda:{local_rank}" if choice == "cuda" else "cpu"


def main(argv: list[str] | None = None, callbacks: Sequence[Callback] = ()) -> dict[str, object]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32, help="per process (the global batch is this x world size)")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--limit", type=int, default=0, help="use only this many training samples (0: all)")
    p.add_argument("--out", default="runs/ddp-digits", help="checkpoints and logs (rank 0 writes them)")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --out")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--timeout", type=float, default=1800, help="seconds a collective waits for a dead or hung peer")
    p.add_argument(
        "--device",
        choices=["auto", "cpu", "cuda"],
        default="auto",
        help="cuda:LOCAL_RANK, cpu, or auto (default): cuda when there is a GPU per local process",
    )
    args = p.parse_args(argv)

    device = pick_device(args.device)
    ember.set_default_device(device)  # the model, the optimizer state and the Learner's tensors
    dist.init_process_group("nccl" if device != "cpu" else "gloo", timeout=args.timeout)  # env:// from torchrun
    try:
        ember.manual_seed(args.seed)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)
        train, valid = digits(train=True), digits(train=False)
        if args.limit:
            train = TensorDataset(*(t[: args.limit] for t in train.tensors))
        model = make_model()
        learner = Learner(
            model,
            Adam(model.parameters(), lr=args.lr),
            F.cross_entropy,
            metrics=["loss", "accuracy"],
            device=device,
            checkpoint_dir=args.out,
            progress=not args.no_progress,
            plot=False,
            callbacks=callbacks,
        )
        history = learner.fit(
            DataLoader(train, batch_size=args.batch_size, shuffle=True, seed=args.seed),
            DataLoader(valid, batch_size=256),
            epochs=args.epochs,
            resume=args.resume,
        )
        return {"rank": dist.get_rank(), "world_size": dist.get_world_size(), "history": history}
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
