"""torchdiffeq on a small neural ODE (float64), run by ``test_torchdiffeq_on_ember.py`` twice: under PyTorch
(``save``) and with ``torch`` aliased to Ember (``load``), from the same weights. Each run integrates with a fixed
grid (rk4, with backpropagation through the solver), adaptively (dopri5, with an event function's crossing time
too), and with ``odeint_adjoint`` (the adjoint ODE solved backwards for the gradients), and takes SGD steps."""

import sys

import numpy as np
import torch
from torchdiffeq import odeint, odeint_adjoint, odeint_event

out, mode = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
res = {}


class Field(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))

    def forward(self, t, y):
        return self.net(y) - 0.1 * y * torch.cos(t)


torch.manual_seed(0)
f = Field().double()
if mode == "save":
    torch.save(f.state_dict(), f"{out}/field.pt")
else:
    f.load_state_dict(torch.load(f"{out}/field.pt"))
y0 = torch.tensor([[1.0, 0.5], [-0.3, 0.8]], dtype=torch.float64)
t = torch.linspace(0.0, 1.5, 7, dtype=torch.float64)


def grads(tag):
    for n, p in f.named_parameters():
        res[f"{tag}_grad.{n}"] = p.grad.numpy().copy()
        p.grad = None


for method, kw in (("rk4", {"options": {"step_size": 0.05}}), ("dopri5", {"rtol": 1e-8, "atol": 1e-10})):
    ys = odeint(f, y0, t, method=method, **kw)
    res[f"{method}_ys"] = ys.detach().numpy()
    (ys[-1] ** 2).sum().backward()
    grads(method)

ys = odeint_adjoint(f, y0, t, method="dopri5", rtol=1e-8, atol=1e-10, adjoint_params=tuple(f.parameters()))
res["adjoint_ys"] = ys.detach().numpy()
(ys[-1] ** 2).sum().backward()
grads("adjoint")

y1 = y0[0].clone().requires_grad_(True)
t_event, y_event = odeint_event(lambda s, y: f(s, y), y1, torch.tensor(0.0, dtype=torch.float64),
                                event_fn=lambda s, y: y[0] - 0.2, method="dopri5", rtol=1e-8, atol=1e-10)  # fmt: skip
res["event_t"] = t_event.detach().numpy()
res["event_y"] = y_event.detach().numpy()
t_event.backward()
res["event_grad_y0"] = y1.grad.numpy().copy()

opt = torch.optim.SGD(f.parameters(), lr=0.05)
losses = []
for _ in range(3):
    opt.zero_grad()
    loss = ((odeint(f, y0, t, method="rk4", options={"step_size": 0.1})[-1] - 1.0) ** 2).mean()
    loss.backward()
    opt.step()
    losses.append(loss.item())
res["sgd_losses"] = np.array(losses)
for n, p in f.named_parameters():
    res[f"trained.{n}"] = p.detach().numpy().copy()
np.savez(f"{out}/{mode}.npz", **res)
print("done")
