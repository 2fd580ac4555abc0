# Recipes PyTorch users combine: a CIFAR-style ResNet trained with mixup (Beta draws), label smoothing, OneCycleLR,
# an EMA of the weights (swa_utils.AveragedModel + get_ema_multi_avg_fn), channels_last and bfloat16 autocast on the
# CPU, gradient accumulation and clipping, checkpoint/resume; a tabular model with nn.ModuleDict embeddings,
# WeightedRandomSampler, BCEWithLogitsLoss(pos_weight); an audio classifier on torch.stft magnitudes.
import copy
import io
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

torch.manual_seed(0)
torch.backends.cudnn.benchmark = True
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = BasicBlock(8, 8)
        self.layer2 = BasicBlock(8, 16, 2)
        self.linear = nn.Linear(16, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer2(self.layer1(out))
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)
        return self.linear(out)


mean = torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1)
std = torch.tensor([0.2470, 0.2435, 0.2616]).view(1, 3, 1, 1)
images = torch.rand(64, 3, 16, 16)
labels = torch.randint(0, 10, (64,))


def augment(x):
    if torch.rand(1).item() < 0.5:
        x = torch.flip(x, dims=[3])
    x = F.pad(x, (2, 2, 2, 2), mode="reflect")
    i, j = torch.randint(0, 5, (2,)).tolist()
    return x[:, :, i : i + 16, j : j + 16]


model = ResNet().to(device, memory_format=torch.channels_last)
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.99), use_buffers=True)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
epochs, accum = 2, 2
loader = DataLoader(TensorDataset(images, labels), batch_size=16, shuffle=True, drop_last=True)
scheduler = torch.optim.lr_scheduler.OneCycleLR(
    optimizer, max_lr=0.1, epochs=epochs, steps_per_epoch=math.ceil(len(loader) / accum)
)
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
beta = torch.distributions.Beta(torch.tensor(0.4), torch.tensor(0.4))
for epoch in range(epochs):
    model.train()
    for step, (x, y) in enumerate(loader):
        x = ((augment(x) - mean) / std).to(device, memory_format=torch.channels_last, non_blocking=True)
        lam = beta.sample().item()
        perm = torch.randperm(x.size(0))
        x = lam * x + (1 - lam) * x[perm]
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            out = model(x)
            loss = lam * criterion(out, y) + (1 - lam) * criterion(out, y[perm])
        (loss / accum).backward()
        if (step + 1) % accum == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
            ema.update_parameters(model)
    buf = io.BytesIO()
    torch.save(
        {
            "model": model.state_dict(),
            "ema": ema.state_dict(),
            "opt": optimizer.state_dict(),
            "sched": scheduler.state_dict(),
            "epoch": epoch,
        },
        buf,
    )
buf.seek(0)
ckpt = torch.load(buf, weights_only=True)
resumed = ResNet()
resumed.load_state_dict(ckpt["model"])
opt2 = torch.optim.SGD(resumed.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
opt2.load_state_dict(ckpt["opt"])
ema.module.eval()
with torch.inference_mode():
    acc = (ema.module((images - mean) / std).argmax(1) == labels).float().mean().item()
print(
    f"resnet: loss {loss.item():.3f}, ema accuracy {acc:.3f}, lr {scheduler.get_last_lr()[0]:.4f}, "
    f"epoch {ckpt['epoch']}, n_averaged {int(ema.n_averaged)}"
)
assert math.isfinite(loss.item())

# tabular
n = 200
cats = {"color": torch.randint(0, 5, (n,)), "city": torch.randint(0, 12, (n,))}
nums = torch.randn(n, 4)
target = (nums[:, 0] + (cats["color"] == 2).float() > 1.0).float()


class Tabular(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.ModuleDict({"color": nn.Embedding(5, 3), "city": nn.Embedding(12, 4)})
        self.bn = nn.BatchNorm1d(4)
        self.mlp = nn.Sequential(nn.Linear(3 + 4 + 4, 32), nn.SiLU(), nn.Dropout(0.1), nn.Linear(32, 1))

    def forward(self, cat, num):
        e = [self.emb[k](cat[k]) for k in sorted(self.emb.keys())]
        return self.mlp(torch.cat(e + [self.bn(num)], dim=1)).squeeze(-1)


class DictDataset(torch.utils.data.Dataset):
    def __len__(self):
        return n

    def __getitem__(self, i):
        return {k: v[i] for k, v in cats.items()}, nums[i], target[i]


pos = target.sum()
weights = torch.where(target > 0, 0.5 / pos, 0.5 / (n - pos))
sampler = WeightedRandomSampler(weights.double(), num_samples=n, replacement=True)
tab = Tabular()
opt = torch.optim.AdamW(tab.parameters(), lr=3e-3)
lossf = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(1.5))
for cat, num, t in DataLoader(DictDataset(), batch_size=32, sampler=sampler):
    opt.zero_grad()
    loss = lossf(tab(cat, num), t)
    loss.backward()
    opt.step()
tab.eval()
with torch.no_grad():
    probs = torch.sigmoid(tab(cats, nums))
    auc_pairs = (probs[target > 0].unsqueeze(1) > probs[target == 0].unsqueeze(0)).float().mean()
print(f"tabular: loss {loss.item():.3f}, pairwise AUC {auc_pairs.item():.3f}")

# audio
sr = 8000
t = torch.arange(sr // 4) / sr
waves = torch.stack([torch.sin(2 * math.pi * f * t) for f in (440.0, 880.0, 440.0, 880.0)])
waves = waves + 0.05 * torch.randn_like(waves)
ylab = torch.tensor([0, 1, 0, 1])
window = torch.hann_window(256)
spec = torch.stft(waves, n_fft=256, hop_length=64, window=window, return_complex=True)
logmag = torch.log1p(spec.abs())
recon = torch.istft(spec, n_fft=256, hop_length=64, window=window, length=waves.shape[-1])
audio = nn.Sequential(
    nn.Conv1d(129, 16, 3, padding=1), nn.GELU(), nn.AdaptiveMaxPool1d(1), nn.Flatten(), nn.Linear(16, 2)
)
aopt = torch.optim.Adam(audio.parameters(), lr=1e-2)
for _ in range(30):
    aopt.zero_grad()
    l = F.cross_entropy(audio(logmag), ylab)
    l.backward()
    aopt.step()
print(f"audio: spec {tuple(spec.shape)}, istft error {(recon - waves).abs().max().item():.2e}, loss {l.item():.4f}")
assert (recon - waves).abs().max().item() < 1e-4 and l.item() < 0.1
