# The pruning tutorial (torch.nn.utils.prune), SWA and EMA from the torch.optim docs (swa_utils), and the
# torch.func tutorials: model ensembling (stack_module_state + vmap) and per-sample gradients.
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune
from torch.func import functional_call, grad, stack_module_state, vmap
from torch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.bn = nn.BatchNorm2d(16)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.bn(self.conv2(x))), 2)
        x = x.view(-1, int(x.nelement() / x.shape[0]))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


X = torch.randn(64, 1, 28, 28)
Y = torch.randint(0, 10, (64,))
loader = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)

# -- pruning ---------------------------------------------------------------------------------------
model = LeNet()
module = model.conv1
prune.random_unstructured(module, name="weight", amount=0.3)
assert [n for n, _ in module.named_parameters()] == ["bias", "weight_orig"]
assert [n for n, _ in module.named_buffers()] == ["weight_mask"]
print(module._forward_pre_hooks)
prune.l1_unstructured(module, name="bias", amount=3)
prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
for hook in module._forward_pre_hooks.values():
    if hook._tensor_name == "weight":
        break
print(list(hook))
print(model.state_dict().keys())
prune.remove(module, "weight")
print(list(module.named_parameters())[0][0], list(module.named_buffers())[0][0])
parameters_to_prune = (
    (model.conv1, "weight"),
    (model.conv2, "weight"),
    (model.fc1, "weight"),
    (model.fc2, "weight"),
    (model.fc3, "weight"),
)
prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)
total = sum(float(torch.sum(getattr(m, n) == 0)) for m, n in parameters_to_prune)
count = sum(getattr(m, n).nelement() for m, n in parameters_to_prune)
print("Global sparsity: {:.2f}%".format(100.0 * total / count))
assert abs(total / count - 0.2) < 0.03

# -- SWA and EMA (of a fresh model: PyTorch cannot deep-copy a pruned one) -------------------------
for m, n in parameters_to_prune:
    prune.remove(m, n)
model = LeNet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
swa_model = AveragedModel(model)
ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=4)
swa_start = 2
swa_scheduler = SWALR(optimizer, swa_lr=0.05)
for epoch in range(5):
    for input, target in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(input), target)
        loss.backward()
        optimizer.step()
        ema_model.update_parameters(model)
    if epoch > swa_start:
        swa_model.update_parameters(model)
        swa_scheduler.step()
    else:
        scheduler.step()
    print("epoch", epoch, "loss %.4f" % loss.item(), "lr %.4f" % optimizer.param_groups[0]["lr"])
update_bn(loader, swa_model)
swa_model.eval()
with torch.no_grad():
    print("swa loss %.4f" % F.cross_entropy(swa_model(X), Y).item(), int(swa_model.n_averaged))
assert int(swa_model.n_averaged) == 2 and int(ema_model.n_averaged) == 20


# -- model ensembling and per-sample gradients with torch.func ----------------------------------------
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


models = [MLP() for _ in range(4)]
params, buffers = stack_module_state(models)
base_model = copy.deepcopy(models[0]).to("meta")  # (the tutorial's: a stateless skeleton, no memory)
assert base_model.fc1.weight.is_meta and base_model.fc1.weight.shape == (64, 784)


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


minibatch = X[:8]
predictions1_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
expected = torch.stack([m(minibatch) for m in models])
assert torch.allclose(predictions1_vmap, expected, atol=1e-5, rtol=1e-5)
print(predictions1_vmap.shape)

model = MLP()
params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    targets = target.unsqueeze(0)
    predictions = functional_call(model, (params, buffers), (batch,))
    return F.cross_entropy(predictions, targets)


ft_compute_sample_grad = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))
ft_per_sample_grads = ft_compute_sample_grad(params, buffers, X[:8], Y[:8])
for i in range(8):
    model.zero_grad()
    F.cross_entropy(model(X[i : i + 1]), Y[i : i + 1]).backward()
    for name, p in model.named_parameters():
        assert torch.allclose(ft_per_sample_grads[name][i], p.grad, atol=1e-6, rtol=1e-5), name
print({k: tuple(v.shape) for k, v in ft_per_sample_grads.items()})
