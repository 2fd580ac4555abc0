# Models written the way many research repositories write them: with einops (rearrange/reduce/repeat, its
# nn layers, einsum, pack/unpack): a ViT with a class token, and a Perceiver-style cross-attention block,
# trained a few steps on synthetic images; then a compiled forward must match eager.
import sys

try:
    import einops
except ImportError:  # the Makefile installs einops; without it there is nothing to check
    print("einops not installed")
    sys.exit(0)

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import einsum, pack, rearrange, reduce, repeat, unpack
from einops.layers.torch import Rearrange, Reduce

torch.manual_seed(0)


class Attention(nn.Module):
    def __init__(self, dim, heads=4, dim_head=8, context_dim=None):
        super().__init__()
        inner = heads * dim_head
        self.heads, self.scale = heads, dim_head**-0.5
        self.norm = nn.LayerNorm(dim)
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_kv = nn.Linear(context_dim or dim, inner * 2, bias=False)
        self.to_out = nn.Linear(inner, dim)

    def forward(self, x, context=None):
        x = self.norm(x)
        context = x if context is None else context
        q = self.to_q(x)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        sim = einsum(q, k, "b h i d, b h j d -> b h i j") * self.scale
        attn = sim.softmax(dim=-1)
        out = einsum(attn, v, "b h i j, b h j d -> b h i d")
        return self.to_out(rearrange(out, "b h n d -> b n (h d)"))


class FeedForward(nn.Sequential):
    def __init__(self, dim, mult=2):
        super().__init__(nn.LayerNorm(dim), nn.Linear(dim, dim * mult), nn.GELU(), nn.Linear(dim * mult, dim))


class ViT(nn.Module):
    def __init__(self, image=16, patch=4, dim=32, depth=2, classes=5, channels=3):
        super().__init__()
        n = (image // patch) ** 2
        self.to_patches = nn.Sequential(
            Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
            nn.LayerNorm(patch * patch * channels),
            nn.Linear(patch * patch * channels, dim),
            nn.LayerNorm(dim),
        )
        self.cls = nn.Parameter(torch.randn(dim))
        self.pos = nn.Parameter(torch.randn(n + 1, dim) * 0.02)
        self.layers = nn.ModuleList([nn.ModuleList([Attention(dim), FeedForward(dim)]) for _ in range(depth)])
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, classes))

    def forward(self, img):
        x = self.to_patches(img)
        cls = repeat(self.cls, "d -> b d", b=x.shape[0])
        x, ps = pack([cls, x], "b * d")
        x = x + self.pos[: x.shape[1]]
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        cls, _ = unpack(x, ps, "b * d")
        return self.head(cls)


class Perceiver(nn.Module):
    """Latents cross-attend to the input tokens, then self-attend; mean-pool to logits."""

    def __init__(self, in_dim=3, latents=6, dim=32, classes=5):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(latents, dim))
        self.cross = Attention(dim, context_dim=in_dim)
        self.self_attn = Attention(dim)
        self.head = nn.Sequential(Reduce("b n d -> b d", "mean"), nn.LayerNorm(dim), nn.Linear(dim, classes))

    def forward(self, img):
        tokens = rearrange(img, "b c h w -> b (h w) c")
        x = repeat(self.latents, "n d -> b n d", b=img.shape[0])
        x = self.cross(x, context=tokens) + x
        x = self.self_attn(x) + x
        return self.head(x)


images = torch.randn(32, 3, 16, 16)
labels = (reduce(images, "b c h w -> b", "mean") > 0).long() + 2 * (images[:, 0, 0, 0] > 0).long()
for model in (ViT(), Perceiver()):
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for step in range(12):
        idx = torch.randperm(32)[:16]
        loss = F.cross_entropy(model(images[idx]), labels[idx])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    assert sum(losses[-3:]) < sum(losses[:3]), losses
    model.eval()
    compiled = torch.compile(model)
    with torch.no_grad():
        eager = model(images)
        for _ in range(3):
            assert torch.allclose(compiled(images), eager, atol=1e-5)  # (Ember: bit-identical; inductor: close)
    print(type(model).__name__, "loss", round(losses[0], 3), "->", round(losses[-1], 3))
