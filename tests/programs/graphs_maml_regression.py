# A GCN on a sparse adjacency (torch.sparse), a GAT-style layer with scatter_reduce softmax, MAML with
# second-order gradients through functional_call, and pytorch/examples' regression and forward-forward.
import torch
import torch.nn as nn
import torch.nn.functional as F
from collections import OrderedDict
from torch.func import functional_call

torch.manual_seed(0)
N, E, Fin, C = 30, 90, 8, 3
src = torch.randint(0, N, (E,))
dst = torch.randint(0, N, (E,))
edge_index = torch.stack([torch.cat([src, dst, torch.arange(N)]), torch.cat([dst, src, torch.arange(N)])])
x = torch.randn(N, Fin)
y = torch.randint(0, C, (N,))
deg = torch.zeros(N).scatter_add_(0, edge_index[0], torch.ones(edge_index.size(1)))
norm = deg[edge_index[0]].pow(-0.5) * deg[edge_index[1]].pow(-0.5)
adj = torch.sparse_coo_tensor(edge_index, norm, (N, N)).coalesce()


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(Fin, 16)
        self.l2 = nn.Linear(16, C)

    def forward(self, x, adj):
        h = F.relu(torch.sparse.mm(adj, self.l1(x)))
        h = F.dropout(h, 0.5, self.training)
        return torch.sparse.mm(adj, self.l2(h))


gcn = GCN()
opt = torch.optim.Adam(gcn.parameters(), lr=0.01, weight_decay=5e-4)
train_mask = torch.zeros(N, dtype=torch.bool)
train_mask[:20] = True
for epoch in range(20):
    gcn.train()
    opt.zero_grad()
    out = F.log_softmax(gcn(x, adj), dim=1)
    loss = F.nll_loss(out[train_mask], y[train_mask])
    loss.backward()
    opt.step()
print("gcn loss", round(loss.item(), 4))


class GATLayer(nn.Module):
    def __init__(self, fin, fout):
        super().__init__()
        self.W = nn.Linear(fin, fout, bias=False)
        self.a = nn.Parameter(torch.randn(2 * fout) * 0.1)

    def forward(self, x, edge_index):
        h = self.W(x)
        s, d = edge_index
        e = F.leaky_relu((torch.cat([h[s], h[d]], dim=-1) * self.a).sum(-1), 0.2)
        emax = torch.full((x.size(0),), float("-inf")).scatter_reduce(0, d, e, reduce="amax", include_self=True)
        w = (e - emax[d]).exp()
        denom = torch.zeros(x.size(0)).index_add_(0, d, w)
        alpha = w / denom[d]
        return torch.zeros_like(h).index_add_(0, d, alpha.unsqueeze(-1) * h[s])


gat = GATLayer(Fin, C)
opt = torch.optim.Adam(gat.parameters(), lr=0.01)
for epoch in range(10):
    loss = F.cross_entropy(gat(x, edge_index), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("gat loss", round(loss.item(), 4))

# MAML on sine regression
net = nn.Sequential(
    OrderedDict(
        [
            ("l1", nn.Linear(1, 40)),
            ("relu1", nn.ReLU()),
            ("l2", nn.Linear(40, 40)),
            ("relu2", nn.ReLU()),
            ("l3", nn.Linear(40, 1)),
        ]
    )
)
meta_opt = torch.optim.Adam(net.parameters(), lr=1e-3)


def task():
    amp, phase = torch.rand(1) * 4.9 + 0.1, torch.rand(1) * 3.14
    xs = torch.rand(20, 1) * 10 - 5
    return xs, amp * torch.sin(xs + phase)


for it in range(5):
    meta_opt.zero_grad()
    outer = 0.0
    for _ in range(4):
        xs, ys = task()
        params = dict(net.named_parameters())
        for _ in range(2):
            inner = F.mse_loss(functional_call(net, params, (xs[:10],)), ys[:10])
            grads = torch.autograd.grad(inner, params.values(), create_graph=True)
            params = {n: p - 0.01 * g for (n, p), g in zip(params.items(), grads)}
        outer = outer + F.mse_loss(functional_call(net, params, (xs[10:],)), ys[10:])
    (outer / 4).backward()
    meta_opt.step()
    print("maml", it, round(outer.item() / 4, 4))
assert all(p.grad is not None for p in net.parameters())

# pytorch/examples regression
POLY_DEGREE = 4
W_target = torch.randn(POLY_DEGREE, 1) * 5
b_target = torch.randn(1) * 5


def make_features(x):
    x = x.unsqueeze(1)
    return torch.cat([x**i for i in range(1, POLY_DEGREE + 1)], 1)


def f(x):
    return x.mm(W_target) + b_target.item()


def poly_desc(W, b):
    result = "y = "
    for i, w in enumerate(W):
        result += "{:+.2f} x^{} ".format(w, i + 1)
    result += "{:+.2f}".format(b[0])
    return result


fc = torch.nn.Linear(W_target.size(0), 1)
for batch_idx in range(1, 200):
    random = torch.randn(32)
    batch_x = make_features(random)
    batch_y = f(batch_x)
    fc.zero_grad()
    output = F.smooth_l1_loss(fc(batch_x), batch_y)
    loss = output.item()
    output.backward()
    for param in fc.parameters():
        param.data.add_(-0.1 * param.grad)
    if loss < 1e-3:
        break
print("Loss: {:.6f} after {} batches".format(loss, batch_idx))
print("==> Learned function:\t" + poly_desc(fc.weight.view(-1), fc.bias))
print("==> Actual function:\t" + poly_desc(W_target.view(-1), b_target))


# forward-forward (pytorch/examples mnist_forward_forward), on random data
def overlay_y_on_x(x, y):
    x_ = x.clone()
    x_[:, :10] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class FFLayer(nn.Linear):
    def __init__(self, in_features, out_features):
        super().__init__(in_features, out_features)
        self.relu = torch.nn.ReLU()
        self.opt = torch.optim.Adam(self.parameters(), lr=0.03)
        self.threshold = 2.0

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train_layer(self, x_pos, x_neg):
        for i in range(20):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            loss = torch.log(1 + torch.exp(torch.cat([-g_pos + self.threshold, g_neg - self.threshold]))).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


xs = torch.rand(50, 784)
ys = torch.randint(0, 10, (50,))
x_pos = overlay_y_on_x(xs, ys)
rnd = torch.randperm(xs.size(0))
x_neg = overlay_y_on_x(xs, ys[rnd])
h_pos, h_neg = x_pos, x_neg
for layer in [FFLayer(784, 100), FFLayer(100, 100)]:
    h_pos, h_neg = layer.train_layer(h_pos, h_neg)
print("ff done", h_pos.shape)
