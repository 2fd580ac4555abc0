"""The ``ember`` command: ``ember train EXAMPLE``, ``ember info``, ``ember pnnx|onnx run|info MODEL``."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

from ._argtypes import number_arg as _number

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``ember: --epochs must be >= 1 (got 0)``, exit status 2."""

    def error(self, message: str) -> NoReturn:
        m = re.fullmatch(r"argument ([^:]+): (must .*)", message, flags=re.DOTALL)
        text = f"{m.group(1).split('/')[-1]} {m.group(2)}" if m else message
        self.exit(2, f"ember: {text}\n")


def _device(text: str) -> str:
    from ._device import device

    try:
        device(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be cpu, cuda or cuda:N (got {text!r})") from None
    return text


def _folder(text: str) -> Path:
    p = Path(text)
    if p.exists() and not p.is_dir():
        raise argparse.ArgumentTypeError(f"must be a folder ({text} is an existing file)")
    return p


def _epilog() -> str:
    from .tasks import TASKS

    width = max(map(len, TASKS))
    lines = ["examples (ember train EXAMPLE):"]
    lines += [f"  {name:<{width}}  {task.description}" for name, task in TASKS.items()]
    lines += ["", "for instance:",
              "  ember train digits-cnn                 train LeNet-5 on the bundled 8x8 digits (about a minute)",
              "  ember train digits-mlp --epochs 5      a shorter MLP run",
              "  ember train mnist-cnn --data-dir DIR   MNIST from IDX files you placed in DIR",
              "  ember train digits-cnn --resume        continue the last run from its checkpoint",
              "  ember train digits-cnn --tensorboard   also log to TensorBoard (tensorboard --logdir runs)",
              "  ember info                             version, backends and devices",
              "  ember pnnx run M.pnnx.param --image I  classify (top-5) or detect (YOLOv5: PNG) with a PNNX model",
              "  ember pnnx info M.pnnx.param           a PNNX graph's operators and which are supported",
              "  ember onnx info M.onnx                 an ONNX model's inputs, outputs, opsets and operators",
              "  ember onnx run M.onnx --input x=x.npy  run an ONNX model; outputs saved as .npy"]  # fmt: skip
    return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
    from .tasks import TASKS

    p = _Parser(prog="ember", description="Ember: train and inspect models from the command line.",
                epilog=_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    t = sub.add_parser("train", help="train one of the built-in examples", epilog=_epilog(),
                       description="Train a built-in example.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    t.add_argument("example", metavar="EXAMPLE", help=f"one of: {', '.join(TASKS)}")
    t.add_argument("--epochs", type=_number(int, 1), help="number of epochs (default: the example's)")
    t.add_argument("--batch-size", type=_number(int, 1), help="training batch size (default: the example's)")
    t.add_argument("--lr", type=_number(float, 0, strict=True), help="learning rate (default: the example's)")
    t.add_argument("--device", type=_device, default=None, help="cpu or cuda[:N] (default: cpu)")
    t.add_argument("--out", type=_folder, help="output folder for logs, plot and checkpoints (default: runs/EXAMPLE)")
    t.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --out")
    t.add_argument("--seed", type=_number(int, 0), default=0, help="random seed, >= 0 (default 0)")
    t.add_argument("--data-dir", type=_folder, help="folder with the data files (MNIST examples)")
    t.add_argument("--download", action="store_true", help="download missing data when the network is available")
    t.add_argument("--limit", type=_number(int, 1), help="use at most this many samples per split (quick tries)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar or epoch lines")
    t.add_argument("--tensorboard", action="store_true",
                   help="also write TensorBoard event files in --out (view: tensorboard --logdir runs)")  # fmt: skip
    t.add_argument(
        "--compile", action="store_true", help="capture the training step once and replay it (ember.compile)"
    )
    t.add_argument("--precision", choices=["32", "bf16-mixed", "16-mixed"], default="32",
                   help="32 (default), bf16-mixed (bfloat16 autocast; NumPy and torch on the CPU) or "
                        "16-mixed (float16 autocast with a GradScaler)")  # fmt: skip
    sub.add_parser("info", help="show the version, backends and devices")
    from .pnnx._cli import add_parser as add_pnnx_parser

    add_pnnx_parser(sub)
    from .onnx._cli import add_parser as add_onnx_parser

    add_onnx_parser(sub)
    return p


def _check_device(spec: str | None) -> None:
    """A one-line error for a device this machine does not have (before any data is loaded)."""
    if spec is None or not spec.startswith("cuda"):
        return
    import ember

    cuda: Any = getattr(ember, "cuda", None)
    if cuda is None or not cuda.is_available():
        raise _UsageError(f"--device {spec}: CUDA is not available on this machine (use --device cpu)")
    count = cuda.device_count() if hasattr(cuda, "device_count") else 1
    index = int(spec.partition(":")[2] or 0)
    if index >= count:
        raise _UsageError(f"--device {spec}: this machine has {count} CUDA device(s) (cuda:0 to cuda:{count - 1})")


class _UsageError(Exception):
    """A bad option value found after parsing (exit status 2)."""


def _train(args: argparse.Namespace) -> int:
    import ember

    from .tasks import TASKS, build
    from .train import Learner

    if args.example not in TASKS:
        raise _UsageError(f"unknown example {args.example!r}; choose from: {', '.join(TASKS)}")
    _check_device(args.device)
    task = TASKS[args.example]
    epochs = args.epochs if args.epochs is not None else task.epochs
    batch_size = args.batch_size if args.batch_size is not None else task.batch_size
    lr = args.lr if args.lr is not None else task.lr
    out = args.out if args.out is not None else Path("runs") / args.example
    ember.manual_seed(args.seed)
    parts = build(args.example, batch_size=batch_size, lr=lr, seed=args.seed, limit=args.limit,
                  data_dir=args.data_dir, download=args.download, epochs=epochs)  # fmt: skip
    learner = Learner(parts["model"], parts["optimizer"], parts["loss_fn"], scheduler=parts.get("scheduler"),
                      metrics=task.metrics, device=args.device, checkpoint_dir=out / "checkpoints", out_dir=out,
                      best_metric=task.best_metric, progress=not args.no_progress, compile=args.compile,
                      precision=args.precision,
                      loggers=["csv", "tensorboard"] if args.tensorboard else None)  # fmt: skip
    if args.resume and args.no_progress and not learner.checkpointer.paths():  # type: ignore[union-attr]
        # (with progress output on, the Learner says so itself)
        print(f"ember: nothing to resume in {out / 'checkpoints'}; starting from epoch 1", file=sys.stderr)
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
    print(f"selected: cpu -> {ember.backends.current('cpu')} backend (EMBER_BACKEND or ember.backends.use to change)")
    print("backends:")
    for status in ember.backends.available().values():
        print(f"  {status}")
    devices = sorted({d for s in ember.backends.available().values() for d in s.devices})
    print(f"devices: {', '.join(devices)}")
    from .distributed import backend_status

    dist = backend_status()
    usable = [name for name, why in dist.items() if why is None]
    print(f"distributed (torch.distributed): {', '.join(usable) if usable else 'none'}")
    for name, why in dist.items():
        if why is not None:
            print(f"  {name}: {why}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from ._errors import EmberError

    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, or a bad option (already reported in one line): return its status
        return e.code if isinstance(e.code, int) else 2
    if args.command is None:
        parser.print_help()
        return 0
    try:
        if args.command == "train":
            return _train(args)
        if args.command == "pnnx":
            from .pnnx._cli import main as pnnx_main

            return pnnx_main(args)
        if args.command == "onnx":
            from .onnx._cli import main as onnx_main

            return onnx_main(args)
        return _info()
    except _UsageError as e:
        print(f"ember: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ember: interrupted", file=sys.stderr)
        return 130
    except (OSError, ValueError, KeyError, ImportError, EmberError, FloatingPointError) as e:  # one line each
        text = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"ember: {text}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
