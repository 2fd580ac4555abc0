# Checkpoints the way the Hugging Face ecosystem writes them: safetensors.torch's save_file/load_file and
# save_model/load_model (which look for tensors sharing memory through untyped_storage()), bfloat16 and float16
# weights, metadata, a tied embedding; then training resumes from the file.
import os
import sys
import tempfile

try:
    from safetensors.torch import load, load_file, load_model, save, save_file, save_model
except ImportError:  # Ember's `record` extra installs safetensors; without it there is nothing to check
    print("safetensors not installed")
    sys.exit(0)

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class TinyLM(nn.Module):
    def __init__(self, vocab=20, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.block = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU())
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied, as GPT-2's

    def forward(self, ids):
        return self.head(self.block(self.embed(ids)))


def train(model, steps, opt):
    ids = torch.randint(0, 20, (8, 6))
    for _ in range(steps):
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 20), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


model = TinyLM()
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
first = train(model, 5, opt)
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "model.safetensors")
    save_model(model, path, metadata={"step": "5"})  # the tied weight is written once
    again = TinyLM()
    missing, unexpected = load_model(again, path)
    assert not missing and not unexpected, (missing, unexpected)
    assert again.head.weight is again.embed.weight
    ids = torch.randint(0, 20, (2, 5))
    assert torch.equal(again(ids), model(ids))

    tensors = {
        "w16": model.block[1].weight.detach().to(torch.float16),
        "bf16": model.block[1].weight.detach().to(torch.bfloat16),
        "steps": torch.arange(4),
        "mask": torch.tensor([True, False]),
    }
    flat = os.path.join(d, "flat.safetensors")
    save_file(tensors, flat, metadata={"format": "pt"})
    back = load_file(flat)
    assert sorted(back) == sorted(tensors)
    for k, v in tensors.items():
        assert back[k].dtype == v.dtype and torch.equal(back[k], v), k
    assert sorted(load(save(tensors))) == sorted(tensors)

    opt2 = torch.optim.AdamW(again.parameters(), lr=1e-2)
    resumed = train(again, 5, opt2)
print("loss", round(first, 3), "-> resumed", round(resumed, 3))
