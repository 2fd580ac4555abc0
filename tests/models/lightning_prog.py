"""PyTorch Lightning's Trainer on the CPU, run by ``test_lightning_on_ember.py`` twice: under PyTorch (``save``)
and with ``torch`` aliased to Ember (``load``), from the same weights and data. A LightningModule (training_step,
validation_step, predict_step, configure_optimizers with Adam and a StepLR schedule) is fitted for a few steps with
checkpointing on; then ``validate``, ``predict``, ``load_from_checkpoint`` of the checkpoint written, a resumed fit
(``ckpt_path=``: weights, Adam's moments, the schedule and the step count come back), and, under Ember, the
checkpoint that PyTorch wrote."""

import sys
import warnings

import numpy as np
import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities.model_summary import ModelSummary
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
out, mode = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
res = {}
rng = np.random.default_rng(0)
x = torch.tensor(rng.standard_normal((24, 4)).astype(np.float32))
y = torch.tensor(rng.standard_normal((24, 1)).astype(np.float32))


class Regressor(pl.LightningModule):
    def __init__(self, hidden=8, lr=0.05):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1))
        self.example_input_array = torch.zeros(5, 4)  # the model summary runs it: sizes and FLOPs per layer
        self.losses = []

    def forward(self, xb):
        return self.net(xb)

    def training_step(self, batch, batch_idx):
        xb, yb = batch
        loss = torch.nn.functional.mse_loss(self(xb), yb)
        self.log("train_loss", loss)
        self.losses.append(loss.item())
        return loss

    def validation_step(self, batch, batch_idx):
        xb, yb = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self(xb), yb))

    def predict_step(self, batch, batch_idx):
        return self(batch[0])

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)}


def loader():
    return DataLoader(TensorDataset(x, y), batch_size=6, shuffle=False)


def params(model, tag):
    for n, p in model.named_parameters():
        res[f"{tag}.{n}"] = p.detach().numpy().copy()


def trainer(steps, root):
    return pl.Trainer(
        max_steps=steps,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=True,
        enable_progress_bar=False,
        default_root_dir=root,
    )


pl.seed_everything(0, verbose=False)
model = Regressor()
if mode == "save":
    torch.save(model.state_dict(), f"{out}/init.pt")
else:
    model.load_state_dict(torch.load(f"{out}/init.pt"))
t = trainer(6, f"{out}/{mode}")
t.fit(model, loader(), loader())
res["losses"] = np.array(model.losses)
res["global_step"] = np.array(t.global_step)
res["lr"] = np.array(t.optimizers[0].param_groups[0]["lr"])
res["callback_loss"] = np.array(float(t.callback_metrics["train_loss"]))
params(model, "fit")
res["val_loss"] = np.array(t.validate(model, loader(), verbose=False)[0]["val_loss"])
res["predict"] = torch.cat(t.predict(model, loader())).numpy()
summary = ModelSummary(model, max_depth=2)
res["summary_flops"] = np.array(summary.total_flops)
res["summary_layer_flops"] = np.array([sum(c.values()) for c in summary.flop_counts.values()])
res["summary_params"] = np.array(summary.param_nums)
res["summary_sizes"] = np.array([str(s) for s in summary.in_sizes + summary.out_sizes])
res["summary_names"] = np.array(summary.layer_names + summary.layer_types)

ckpt = t.checkpoint_callback.best_model_path
t.save_checkpoint(f"{out}/{mode}_final.ckpt")
loaded = Regressor.load_from_checkpoint(ckpt)
res["loaded_hidden"] = np.array(loaded.hparams.hidden)
params(loaded, "loaded")

resumed = Regressor()  # fresh weights: the checkpoint brings everything back
t2 = trainer(10, f"{out}/{mode}_resume")
t2.fit(resumed, loader(), ckpt_path=f"{out}/{mode}_final.ckpt")
res["resumed_losses"] = np.array(resumed.losses)
res["resumed_step"] = np.array(t2.global_step)
res["resumed_lr"] = np.array(t2.optimizers[0].param_groups[0]["lr"])
params(resumed, "resumed")

from_torch = Regressor.load_from_checkpoint(f"{out}/save_final.ckpt")  # PyTorch's (in the PyTorch run: its own)
params(from_torch, "from_torch")
np.savez(f"{out}/{mode}.npz", **res)
print("done")
