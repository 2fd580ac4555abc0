import torch, torch.nn as nn, torch.nn.functional as F
from torch.nn.utils import spectral_norm
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
# WGAN-GP with spectral norm in the critic
G = nn.Sequential(nn.Linear(8, 32), nn.LeakyReLU(0.2), nn.Linear(32, 2))
D = nn.Sequential(spectral_norm(nn.Linear(2, 32)), nn.LeakyReLU(0.2), spectral_norm(nn.Linear(32, 1)))
oG = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.9))
oD = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.9))


def gradient_penalty(D, real, fake):
    alpha = torch.rand(real.size(0), 1).expand_as(real)
    interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    out = D(interp)
    grads = torch.autograd.grad(
        outputs=out,
        inputs=interp,
        grad_outputs=torch.ones_like(out),
        create_graph=True,
        retain_graph=True,
        only_inputs=True,
    )[0]
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


for it in range(20):
    real = torch.randn(16, 2) * 0.5 + 1
    fake = G(torch.randn(16, 8)).detach()
    lossD = D(fake).mean() - D(real).mean() + 10 * gradient_penalty(D, real, fake)
    oD.zero_grad()
    lossD.backward()
    oD.step()
    if it % 5 == 0:
        lossG = -D(G(torch.randn(16, 8))).mean()
        oG.zero_grad()
        lossG.backward()
        oG.step()
print("wgan", round(lossD.item(), 3))


# a small UNet with checkpointing, bilinear upsampling and grid_sample augmentation
class Block(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.c = nn.Sequential(
            nn.Conv2d(i, o, 3, padding=1),
            nn.GroupNorm(4, o),
            nn.SiLU(),
            nn.Conv2d(o, o, 3, padding=1),
            nn.GroupNorm(4, o),
            nn.SiLU(),
        )

    def forward(self, x):
        return self.c(x)


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.d1 = Block(3, 8)
        self.d2 = Block(8, 16)
        self.u1 = Block(24, 8)
        self.out = nn.Conv2d(8, 1, 1)

    def forward(self, x):
        a = self.d1(x)
        b = checkpoint(self.d2, F.max_pool2d(a, 2), use_reentrant=False)
        u = F.interpolate(b, scale_factor=2, mode="bilinear", align_corners=False)
        return self.out(self.u1(torch.cat([a, u], dim=1)))


net = UNet()
opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
x = torch.rand(2, 3, 16, 16)
y = (x.mean(1, keepdim=True) > 0.5).float()
theta = torch.tensor([[[1.0, 0.1, 0.0], [-0.1, 1.0, 0.0]]]).repeat(2, 1, 1)
for it in range(5):
    grid = F.affine_grid(theta, x.shape, align_corners=False)
    xa = F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
    loss = F.binary_cross_entropy_with_logits(net(xa), y, pos_weight=torch.tensor([2.0]))
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    opt.step()
print("unet", round(loss.item(), 3))
# multi-head attention with padding masks, batch_first, and a transformer encoder with src_key_padding_mask
mha = nn.MultiheadAttention(16, 4, batch_first=True, dropout=0.1)
q = torch.randn(3, 5, 16)
pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
out, w = mha(q, q, q, key_padding_mask=pad, need_weights=True, average_attn_weights=False)
enc = nn.TransformerEncoder(
    nn.TransformerEncoderLayer(16, 4, 32, batch_first=True, norm_first=True), 2, enable_nested_tensor=False
)
y = enc(q, src_key_padding_mask=pad, mask=nn.Transformer.generate_square_subsequent_mask(5), is_causal=True)
y.sum().backward()
print("mha", tuple(out.shape), tuple(w.shape), tuple(y.shape), torch.isfinite(y).all().item())
