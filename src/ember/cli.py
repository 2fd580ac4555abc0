"""The ``ember`` command: ``ember train EXAMPLE``, ``ember info``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["main"]

_EPILOG = """examples:
  ember train digits-cnn                 train LeNet-5 on the bundled 8x8 digits (about a minute)
  ember train digits-mlp --epochs 5      a shorter MLP run
  ember train mnist-cnn --data-dir DIR   MNIST from IDX files you placed in DIR
  ember train digits-cnn --resume        continue the last run from its checkpoint
  ember info                             version, backends and devices
"""


def _parser() -> argparse.ArgumentParser:
    from .tasks import TASKS

    p = argparse.ArgumentParser(prog="ember", description="Ember: train and inspect models from the command line.",
                                epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    t = sub.add_parser("train", help="train one of the built-in examples",
                       description="Train a built-in example. Examples: " +
                       "; ".join(f"{k}: {v.description}" for k, v in TASKS.items()))  # fmt: skip
    t.add_argument("example", metavar="EXAMPLE", help=f"one of: {', '.join(TASKS)}")
    t.add_argument("--epochs", type=int, help="number of epochs (default: the example's)")
    t.add_argument("--batch-size", type=int, help="training batch size (default: the example's)")
    t.add_argument("--lr", type=float, help="learning rate (default: the example's)")
    t.add_argument("--device", default=None, help="cpu or cuda[:N] (default: cpu)")
    t.add_argument("--out", type=Path, help="output folder for logs, plot and checkpoints (default: runs/EXAMPLE)")
    t.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --out")
    t.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    t.add_argument("--data-dir", type=Path, help="folder with the data files (MNIST examples)")
    t.add_argument("--download", action="store_true", help="download missing data when the network is available")
    t.add_argument("--limit", type=int, help="use at most this many samples per split (quick tries)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar or epoch lines")
    sub.add_parser("info", help="show the version, backends and devices")
    return p


def _train(args: argparse.Namespace) -> int:
    import ember

    from .tasks import TASKS, build
    from .train import Learner

    if args.example not in TASKS:
        print(f"ember: unknown example {args.example!r}; choose from: {', '.join(TASKS)}", file=sys.stderr)
        return 2
    task = TASKS[args.example]
    epochs = args.epochs or task.epochs
    ember.manual_seed(args.seed)
    parts = build(args.example, batch_size=args.batch_size or task.batch_size, lr=args.lr or task.lr,
                  seed=args.seed, limit=args.limit, data_dir=args.data_dir, download=args.download,
                  epochs=epochs)  # fmt: skip
    out = args.out or Path("runs") / args.example
    learner = Learner(parts["model"], parts["optimizer"], parts["loss_fn"], scheduler=parts.get("scheduler"),
                      metrics=task.metrics, device=args.device, checkpoint_dir=out / "checkpoints", out_dir=out,
                      best_metric=task.best_metric, progress=not args.no_progress)  # fmt: skip
    history = learner.fit(parts["train"], parts["valid"], epochs=epochs, resume=args.resume)
    if history:
        last = history[-1]
        shown = {k: v for k, v in last.items() if k.startswith("valid_")}
        print(f"{args.example}: " + ", ".join(f"{k} {v:.4f}" for k, v in shown.items()) + f" (logs in {out})")
    return 0


def _info() -> int:
    import platform

    import numpy as np

    import ember

    print(f"ember {ember.__version__} (Python {platform.python_version()}, numpy {np.__version__})")
    print("backends: numpy (cpu)", end="")
    try:
        import torch

        print(f", torch {torch.__version__} available for parity tests", end="")
        if torch.cuda.is_available():
            print(f"; CUDA devices: {torch.cuda.device_count()}", end="")
    except ImportError:
        pass
    print()
    print("devices: cpu")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        if args.command == "train":
            return _train(args)
        return _info()
    except (FileNotFoundError, ValueError, KeyError) as e:
        print(f"ember: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
