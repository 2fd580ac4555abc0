import math, torch, torch.nn as nn, torch.nn.functional as F
from torch.distributions import MultivariateNormal, Normal, Independent

torch.manual_seed(0)


# RealNVP-style coupling flow trained by maximum likelihood
class Coupling(nn.Module):
    def __init__(self, mask):
        super().__init__()
        self.register_buffer("mask", mask)
        self.s = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 2))
        self.t = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, x):
        xm = x * self.mask
        s = self.s(xm) * (1 - self.mask)
        t = self.t(xm) * (1 - self.mask)
        y = xm + (1 - self.mask) * (x * torch.exp(s) + t)
        return y, s.sum(dim=1)


flows = nn.ModuleList([Coupling(torch.tensor([1.0, 0.0])), Coupling(torch.tensor([0.0, 1.0]))])
prior = MultivariateNormal(torch.zeros(2), torch.eye(2))
opt = torch.optim.Adam(flows.parameters(), lr=1e-3)
data = torch.randn(128, 2) @ torch.tensor([[1.0, 0.5], [0.0, 0.5]])
for it in range(30):
    z, logdet = data, torch.zeros(128)
    for f in flows:
        z, ld = f(z)
        logdet = logdet + ld
    loss = -(prior.log_prob(z) + logdet).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("flow", round(loss.item(), 3))
# style transfer on the input image with forward hooks and LBFGS
feats = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU()).eval()
for p in feats.parameters():
    p.requires_grad_(False)
captured = {}
h = feats[1].register_forward_hook(lambda m, i, o: captured.__setitem__("relu1", o))
target = torch.rand(1, 3, 16, 16)
feats(target)
target_f = captured["relu1"].detach()


def gram(x):
    b, c, hh, ww = x.size()
    f = x.view(b * c, hh * ww)
    return torch.mm(f, f.t()).div(b * c * hh * ww)


img = torch.rand(1, 3, 16, 16).requires_grad_(True)
lbfgs = torch.optim.LBFGS([img])
steps = [0]
while steps[0] <= 10:

    def closure():
        with torch.no_grad():
            img.clamp_(0, 1)
        lbfgs.zero_grad()
        feats(img)
        loss = F.mse_loss(gram(captured["relu1"]), gram(target_f)) * 1e3 + F.mse_loss(captured["relu1"], target_f)
        loss.backward()
        steps[0] += 1
        return loss

    lbfgs.step(closure)
h.remove()
print("style", steps[0] > 10)
# distillation, metric learning, and indexing utilities
teacher, student = nn.Linear(10, 5), nn.Linear(10, 5)
x = torch.randn(32, 10)
T = 4.0
kd = (
    F.kl_div(F.log_softmax(student(x) / T, dim=1), F.softmax(teacher(x) / T, dim=1).detach(), reduction="batchmean")
    * T
    * T
)
a, p, n = torch.randn(8, 16), torch.randn(8, 16), torch.randn(8, 16)
trip = (
    nn.TripletMarginLoss(margin=1.0, p=2)(a, p, n)
    + (1 - nn.CosineSimilarity(dim=1)(a, p)).mean()
    + F.pairwise_distance(a, n).mean()
)
(kd + trip).backward()
emb = torch.randn(20, 4)
idx = torch.randint(0, 20, (7,))
d = torch.cdist(emb[idx], emb)
knn = d.topk(3, largest=False).indices
u, inv, counts = torch.unique(torch.tensor([3, 1, 3, 2, 1]), return_inverse=True, return_counts=True)
agg = torch.zeros(3).scatter_add_(0, inv, torch.tensor([1.0, 2, 3, 4, 5]))
bc = torch.bincount(torch.tensor([0, 2, 2, 5]), minlength=6)
hist = torch.histc(torch.tensor([1.0, 2, 1, 4]), bins=4, min=0, max=4)
buckets = torch.bucketize(torch.tensor([0.5, 2.5, 9.0]), torch.tensor([1.0, 2.0, 3.0]))
ss = torch.searchsorted(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0]), right=True)
e = torch.einsum("bij,bjk->bik", torch.randn(2, 3, 4), torch.randn(2, 4, 5)) + torch.baddbmm(
    torch.zeros(2, 3, 5), torch.randn(2, 3, 4), torch.randn(2, 4, 5), beta=0.5, alpha=2
)
print(
    "misc",
    tuple(knn.shape),
    u.tolist(),
    inv.tolist(),
    counts.tolist(),
    agg.tolist(),
    bc.tolist(),
    hist.tolist(),
    buckets.tolist(),
    ss.tolist(),
    tuple(e.shape),
)
