"""LeNet-5 on scikit-learn's 8x8 digits with the Learner: progress, logs, plot, checkpoints, resume."""

import ember
import ember.nn.functional as F
from ember.data import DataLoader, digits
from ember.models import LeNet5Config
from ember.optim import Adam
from ember.optim.lr_scheduler import CosineAnnealingLR
from ember.train import EarlyStopping, Learner

ember.manual_seed(0)
epochs = 30
config = LeNet5Config(image_size=8, width=2)
model = config.init()
opt = Adam(model.parameters(), lr=3e-3)
learner = Learner(
    model,
    opt,
    F.cross_entropy,
    scheduler=CosineAnnealingLR(opt, T_max=epochs),
    metrics=["loss", "accuracy"],
    checkpoint_dir="runs/cnn-example/checkpoints",
    out_dir="runs/cnn-example",
    best_metric="valid_accuracy",
    callbacks=[EarlyStopping("valid_loss", patience=8)],
)
learner.fit(
    DataLoader(digits(train=True), batch_size=32, shuffle=True, seed=0),
    DataLoader(digits(train=False), batch_size=256),
    epochs=epochs,
    resume=True,  # continues from the last checkpoint when run again
)
config.save("runs/cnn-example/config.json")  # structure + parameters = the whole model
