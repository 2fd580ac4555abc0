# A minimal DDPM (a small UNet with GroupNorm/SiLU, sinusoidal time embeddings, EMA of the weights) and a small
# ViT with mixup, label smoothing, warm restarts and gradient clipping.
import math
import copy
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(start=0, end=half, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, tdim):
        super().__init__()
        self.norm1 = nn.GroupNorm(8, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.temb = nn.Linear(tdim, cout)
        self.norm2 = nn.GroupNorm(8, cout)
        self.drop = nn.Dropout(0.1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(temb))[:, :, None, None]
        h = self.conv2(self.drop(F.silu(self.norm2(h))))
        return h + self.skip(x)


class UNet(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.tdim = ch * 4
        self.time = nn.Sequential(nn.Linear(ch, self.tdim), nn.SiLU(), nn.Linear(self.tdim, self.tdim))
        self.inc = nn.Conv2d(1, ch, 3, padding=1)
        self.down1 = ResBlock(ch, ch, self.tdim)
        self.pool = nn.AvgPool2d(2)
        self.down2 = ResBlock(ch, 2 * ch, self.tdim)
        self.mid = ResBlock(2 * ch, 2 * ch, self.tdim)
        self.up = nn.ConvTranspose2d(2 * ch, 2 * ch, 2, stride=2)
        self.up1 = ResBlock(3 * ch, ch, self.tdim)
        self.out = nn.Sequential(nn.GroupNorm(8, ch), nn.SiLU(), nn.Conv2d(ch, 1, 3, padding=1))
        self.ch = ch

    def forward(self, x, t):
        temb = self.time(timestep_embedding(t, self.ch))
        h0 = self.down1(self.inc(x), temb)
        h = self.mid(self.down2(self.pool(h0), temb), temb)
        h = self.up(h)
        h = self.up1(torch.cat([h, h0], dim=1), temb)
        return self.out(h)


T = 100
betas = torch.linspace(1e-4, 0.02, T)
alphas = 1.0 - betas
alphas_cumprod = torch.cumprod(alphas, dim=0)
alphas_cumprod_prev = F.pad(alphas_cumprod[:-1], (1, 0), value=1.0)
sqrt_recip_alphas = torch.sqrt(1.0 / alphas)
posterior_variance = betas * (1.0 - alphas_cumprod_prev) / (1.0 - alphas_cumprod)


def extract(a, t, x_shape):
    out = a.gather(-1, t.cpu())
    return out.reshape(t.shape[0], *((1,) * (len(x_shape) - 1))).to(t.device)


def q_sample(x0, t, noise):
    return extract(alphas_cumprod.sqrt(), t, x0.shape) * x0 + extract((1 - alphas_cumprod).sqrt(), t, x0.shape) * noise


model = UNet()
ema = copy.deepcopy(model).eval()
for p in ema.parameters():
    p.requires_grad_(False)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
data = torch.rand(32, 1, 16, 16) * 2 - 1
for step in range(8):
    x0 = data[torch.randint(0, 32, (8,))]
    t = torch.randint(0, T, (8,), dtype=torch.long)
    noise = torch.randn_like(x0)
    loss = F.mse_loss(model(q_sample(x0, t, noise), t), noise)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    with torch.no_grad():
        for pe, pm in zip(ema.parameters(), model.parameters()):
            pe.mul_(0.99).add_(pm.detach(), alpha=0.01)
        for be, bm in zip(ema.buffers(), model.buffers()):
            be.copy_(bm)
    print("ddpm step", step, round(loss.item(), 4))


@torch.no_grad()
def p_sample_loop(shape):
    img = torch.randn(shape)
    for i in reversed(range(0, T, 10)):
        t = torch.full((shape[0],), i, dtype=torch.long)
        model_mean = extract(sqrt_recip_alphas, t, img.shape) * (
            img - extract(betas, t, img.shape) * ema(img, t) / extract((1 - alphas_cumprod).sqrt(), t, img.shape)
        )
        if i == 0:
            img = model_mean
        else:
            img = model_mean + torch.sqrt(extract(posterior_variance, t, img.shape)) * torch.randn_like(img)
    return img.clamp(-1, 1)


samples = p_sample_loop((4, 1, 16, 16))
assert samples.shape == (4, 1, 16, 16) and torch.isfinite(samples).all()


class PatchEmbed(nn.Module):
    def __init__(self, img=16, patch=4, dim=32):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        self.num_patches = (img // patch) ** 2

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class ViT(nn.Module):
    def __init__(self, dim=32, depth=2, heads=4, classes=10):
        super().__init__()
        self.patch = PatchEmbed(dim=dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, self.patch.num_patches + 1, dim))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        layer = nn.TransformerEncoderLayer(
            dim, heads, dim * 2, dropout=0.1, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, classes)
        self.apply(self._init)

    def _init(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.patch(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embed
        return self.head(self.norm(self.encoder(x))[:, 0])


vit = ViT()
decay = [p for n, p in vit.named_parameters() if p.ndim > 1 and "pos_embed" not in n]
no_decay = [p for n, p in vit.named_parameters() if p.ndim <= 1 or "pos_embed" in n]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=1e-5)
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
beta = torch.distributions.Beta(torch.tensor([0.8]), torch.tensor([0.8]))
images, labels = torch.randn(24, 3, 16, 16), torch.randint(0, 10, (24,))
for epoch in range(6):
    perm = torch.randperm(24)
    for i in range(0, 24, 8):
        idx = perm[i : i + 8]
        x, y = images[idx], labels[idx]
        lam = beta.sample().item()
        index = torch.randperm(x.size(0))
        mixed = lam * x + (1 - lam) * x[index, :]
        out = vit(mixed)
        loss = lam * criterion(out, y) + (1 - lam) * criterion(out, y[index])
        opt.zero_grad()
        loss.backward()
        total_norm = torch.nn.utils.clip_grad_norm_(vit.parameters(), max_norm=1.0)
        opt.step()
        sched.step(epoch + i / 24)
    print("vit epoch", epoch, round(loss.item(), 4), round(float(total_norm), 4), round(sched.get_last_lr()[0], 6))
vit.eval()
with torch.no_grad():
    acc = (vit(images).argmax(1) == labels).float().mean()
print("acc", acc.item())
