import math, collections
import torch, torch.nn as nn
from torch.utils.data import (
    IterableDataset,
    Dataset,
    DataLoader,
    get_worker_info,
    ConcatDataset,
    Subset,
    random_split,
    BatchSampler,
    SequentialSampler,
    default_collate,
)
from torch.nn.utils import parameters_to_vector, vector_to_parameters


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        super().__init__()
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            lo, hi = self.start, self.end
        else:
            per = int(math.ceil((self.end - self.start) / float(info.num_workers)))
            lo = self.start + info.id * per
            hi = min(lo + per, self.end)
        return iter(range(lo, hi))


print(sorted(DataLoader(RangeStream(3, 17), num_workers=2, batch_size=None)))
Pair = collections.namedtuple("Pair", ["x", "meta"])


class DictSet(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return {"img": torch.full((2,), float(i)), "label": i, "pair": Pair(torch.tensor([i]), str(i))}


b = next(
    iter(
        DataLoader(DictSet(), batch_size=4, num_workers=2, pin_memory=False, prefetch_factor=2, persistent_workers=True)
    )
)
print(b["img"].shape, b["label"].tolist(), type(b["pair"]).__name__, b["pair"].meta)
cat = ConcatDataset([DictSet(), DictSet()])
tr, va = random_split(cat, [0.8, 0.2], generator=torch.Generator().manual_seed(1))
print(
    len(tr),
    len(va),
    len(Subset(cat, [0, 5, 19])),
    list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False)),
)
print(default_collate([(torch.ones(2), 1), (torch.zeros(2), 2)])[1].tolist())


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 3)})
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(1)) for _ in range(2)])
        self.extra = nn.ParameterDict({"bias": nn.Parameter(torch.zeros(2))})
        self.register_module("trunk", nn.Sequential(nn.Linear(4, 4), nn.ReLU()))

    def forward(self, x):
        h = self.trunk(x)
        return self.heads["a"](h) * self.scales[0] + self.extra["bias"], self.heads["b"](h) * self.scales[1]


net = Net()
print(sorted(n for n, _ in net.named_modules()), [type(c).__name__ for c in net.children()])
for p in net.trunk.parameters():
    p.requires_grad_(False)
opt = torch.optim.SGD([p for p in net.parameters() if p.requires_grad], lr=0.1)
opt.add_param_group({"params": list(net.trunk.parameters()), "lr": 0.01})
for p in net.trunk.parameters():
    p.requires_grad_(True)
x = torch.randn(5, 4)
a, b2 = net(x)
(a.sum() + b2.sum()).backward()
opt.step()
opt.zero_grad(set_to_none=True)
print(all(p.grad is None for p in net.parameters()), len(opt.param_groups), opt.param_groups[1]["lr"])
vec = parameters_to_vector(net.parameters())
vector_to_parameters(vec * 0, net.parameters())
print(vec.numel(), sum(p.abs().sum().item() for p in net.parameters()))
net.apply(lambda m: nn.init.zeros_(m.bias) if isinstance(m, nn.Linear) else None)
print(net.heads["b"].bias.tolist())
