# Big-model loading as Hugging Face / accelerate do it (``init_empty_weights``): build the model on the meta device
# (no memory), give it storage with ``to_empty`` and load a checkpoint with ``load_state_dict(..., assign=True)``;
# shape inference by running a module on meta inputs; a memory plan from a meta forward and backward.
import math
import os
import tempfile
from contextlib import contextmanager

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


@contextmanager
def init_empty_weights():
    """accelerate's helper, reduced to its core: every parameter and buffer made inside lands on the meta device."""
    with torch.device("meta"):
        yield


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim), nn.Dropout(0.1))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab=50, dim=32, heads=4, layers=2, ctx=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(ctx, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.register_buffer("causal", torch.ones(ctx, ctx).tril())

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


# a trained checkpoint (here: a freshly initialised model saved to disk)
reference = TinyLM().eval()
path = os.path.join(tempfile.mkdtemp(), "tiny_lm.pt")
torch.save(reference.state_dict(), path)

# 1. build without memory
with init_empty_weights():
    model = TinyLM()
assert all(p.is_meta for p in model.parameters()) and model.causal.is_meta
n_params = sum(p.numel() for p in model.parameters())
print(f"{n_params} parameters on {model.head.weight.device}, {model.head.weight!r}")

# 2. a memory plan: forward and backward on meta inputs compute only shapes
idx = torch.randint(0, 50, (4, 16), device="meta")
logits = model(idx)
loss = F.cross_entropy(logits.view(-1, logits.size(-1)), idx.view(-1))
loss.backward()
activation_bytes = logits.numel() * logits.element_size()
print("meta logits", tuple(logits.shape), logits.device, "grad of head", tuple(model.head.weight.grad.shape))
assert model.head.weight.grad.is_meta and loss.shape == ()
model.zero_grad(set_to_none=True)
try:
    loss.item()
except RuntimeError as e:
    print("no value on meta:", e)

# 3. storage, then the checkpoint's tensors themselves
model.to_empty(device="cpu")
state = torch.load(path, map_location="cpu")
result = model.load_state_dict(state, assign=True)
print(result)
model.eval()
x = torch.randint(0, 50, (2, 16))
with torch.no_grad():
    assert torch.equal(model(x), reference(x)), "the loaded model must compute what the reference does"
assert model.head.weight.data_ptr() == state["head.weight"].data_ptr()  # assign: no copy

# 4. the other way to materialise: to_empty, then each layer's own initialisation
with torch.device("meta"):
    fresh = TinyLM()
fresh.to_empty(device="cpu")
for m in fresh.modules():
    if hasattr(m, "reset_parameters"):
        m.reset_parameters()
with torch.no_grad():
    fresh.causal.copy_(torch.ones(16, 16).tril())
    out = fresh(x)
assert torch.isfinite(out).all() and out.shape == (2, 16, 50)

# 5. shape inference: the flattened size of a conv stack from a meta input, then the classifier
features = nn.Sequential(
    nn.Conv2d(3, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.MaxPool2d(2)
)
with torch.device("meta"):
    n_flat = features.to("meta")(torch.empty(1, 3, 32, 32)).flatten(1).shape[1]
features.to_empty(device="cpu")
for m in features.modules():
    if isinstance(m, nn.Conv2d):
        m.reset_parameters()
classifier = nn.Sequential(features, nn.Flatten(), nn.Linear(n_flat, 10))
print("flattened features:", n_flat, tuple(classifier(torch.randn(2, 3, 32, 32)).shape))
assert n_flat == 32 * 7 * 7

# 6. a layer far too large for memory costs nothing on meta
huge = nn.Linear(100_000, 100_000, device="meta")
print("huge layer:", f"{huge.weight.numel() * huge.weight.element_size() / 2**30:.0f} GiB described, none allocated")
assert math.prod(huge(torch.empty(2, 100_000, device="meta")).shape) == 200_000
