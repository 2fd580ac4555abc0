"""accelerate's training loop on the CPU, run by ``test_accelerate_on_ember.py`` twice: under PyTorch (``save``)
and with ``torch`` aliased to Ember (``load``), from the same weights and data. ``Accelerator.prepare`` wraps the
model, an AdamW optimizer and a DataLoader; micro-batches accumulate gradients over 2 steps (``accumulate``,
``backward``, ``clip_grad_norm_``); ``save_state`` after the first epoch, ``load_state`` to replay the second one,
and the Ember run also loads the checkpoint PyTorch saved."""

import sys

import numpy as np
import safetensors.torch as st
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

out, mode = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
res = {}
rng = np.random.default_rng(0)
x = torch.tensor(rng.standard_normal((16, 4)).astype(np.float32))
y = torch.tensor(rng.standard_normal((16, 1)).astype(np.float32))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
if mode == "save":
    st.save_model(model, f"{out}/init.safetensors")
else:
    st.load_model(model, f"{out}/init.safetensors")
opt = torch.optim.AdamW(model.parameters(), lr=0.05)
acc = Accelerator(gradient_accumulation_steps=2, cpu=True)
model, opt, dl = acc.prepare(model, opt, DataLoader(TensorDataset(x, y), batch_size=4, shuffle=False))
res["device"] = np.array(str(acc.device))
res["n_batches"] = np.array(len(dl))


def epoch(tag):
    losses, syncs, grads = [], [], []
    for xb, yb in dl:
        with acc.accumulate(model):
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            acc.backward(loss)
            syncs.append(acc.sync_gradients)
            if acc.sync_gradients:
                grads.append(model[0].weight.grad.numpy().copy())  # the 2 micro-batches, each loss halved
                acc.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            opt.zero_grad()
            losses.append(acc.gather(loss.detach()).item())
    res[f"{tag}_losses"] = np.array(losses)
    res[f"{tag}_syncs"] = np.array(syncs)
    res[f"{tag}_grads"] = np.stack(grads)
    for n, p in acc.unwrap_model(model).named_parameters():
        res[f"{tag}_param.{n}"] = p.detach().numpy().copy()


epoch("e1")
acc.save_state(f"{out}/{mode}_ckpt")
epoch("e2")
acc.load_state(f"{out}/{mode}_ckpt")  # back to the end of epoch 1: weights and AdamW's moments
for n, p in acc.unwrap_model(model).named_parameters():
    res[f"restored.{n}"] = p.detach().numpy().copy()
epoch("e2again")
acc.load_state(f"{out}/save_ckpt")  # PyTorch's checkpoint (in the PyTorch run: its own)
epoch("e2torch")
np.savez(f"{out}/{mode}.npz", **res)
print("done")
