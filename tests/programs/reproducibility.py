import os, random
import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset


def seed_everything(seed=42):
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True, warn_only=True)


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


def run():
    seed_everything(0)
    g = torch.Generator()
    g.manual_seed(0)
    ds = TensorDataset(torch.arange(32.0).unsqueeze(1), torch.arange(32))
    dl = DataLoader(ds, batch_size=8, shuffle=True, num_workers=2, worker_init_fn=seed_worker, generator=g)
    model = torch.nn.Sequential(torch.nn.Linear(1, 4), torch.nn.Dropout(0.5), torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    order = []
    for x, y in dl:
        order.append(y.tolist())
        loss = (model(x).squeeze(1) - y.float()).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    state = torch.get_rng_state()
    a = torch.rand(3)
    torch.set_rng_state(state)
    b = torch.rand(3)
    assert torch.equal(a, b)
    r = torch.randn(2, generator=torch.Generator().manual_seed(5))
    return order, [round(v, 6) for v in model[0].weight.detach().flatten().tolist()], r.tolist()


torch.set_num_threads(1)
first, second = run(), run()
assert first == second, "not reproducible"
torch.set_default_dtype(torch.float64)
print(
    torch.zeros(1).dtype,
    torch.get_default_dtype(),
    torch.tensor([1.0]).dtype,
    torch.are_deterministic_algorithms_enabled(),
)
torch.set_default_dtype(torch.float32)
print("reproducible", len(first[0]))
