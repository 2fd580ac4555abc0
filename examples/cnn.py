"""LeNet-5 on the bundled 8x8 digits with the Learner: progress, logs, plot, checkpoints, resume.

python examples/cnn.py                        # 30 epochs into runs/cnn-example
python examples/cnn.py --epochs 40            # run again: continues from the last checkpoint
python examples/cnn.py --tensorboard          # also TensorBoard event files (tensorboard --logdir runs)
"""

from __future__ import annotations

import argparse

import ember
import ember.nn.functional as F
from ember.data import DataLoader, digits
from ember.models import LeNet5Config
from ember.optim import Adam
from ember.optim.lr_scheduler import CosineAnnealingLR
from ember.train import EarlyStopping, Learner


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=30, help="training epochs, counting resumed ones (default 30)")
    p.add_argument("--batch-size", type=int, default=32, help="training batch size (default 32)")
    p.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate (default 3e-3)")
    p.add_argument("--out", default="runs/cnn-example", help="logs, plot and checkpoints (default runs/cnn-example)")
    p.add_argument("--fresh", action="store_true", help="start over instead of resuming from the last checkpoint")
    p.add_argument("--tensorboard", action="store_true", help="also write TensorBoard event files in --out")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = p.parse_args(argv)

    ember.manual_seed(args.seed)
    config = LeNet5Config(image_size=8, width=2)
    model = config.init()
    opt = Adam(model.parameters(), lr=args.lr)
    learner = Learner(
        model,
        opt,
        F.cross_entropy,
        scheduler=CosineAnnealingLR(opt, T_max=args.epochs),
        metrics=["loss", "accuracy"],
        checkpoint_dir=f"{args.out}/checkpoints",
        out_dir=args.out,
        best_metric="valid_accuracy",
        callbacks=[EarlyStopping("valid_loss", patience=8)],
        loggers=["csv", "tensorboard"] if args.tensorboard else ["csv"],
    )
    history = learner.fit(
        DataLoader(digits(train=True), batch_size=args.batch_size, shuffle=True, seed=args.seed),
        DataLoader(digits(train=False), batch_size=256),
        epochs=args.epochs,
        resume=not args.fresh,  # continues from the last checkpoint when run again
    )
    config.save(f"{args.out}/config.json")  # structure + parameters = the whole model
    return history


if __name__ == "__main__":
    main()
