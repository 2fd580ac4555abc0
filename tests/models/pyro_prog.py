"""Pyro on a small Bayesian regression, run by ``test_pyro_on_ember.py`` under PyTorch and with ``torch`` a package
forwarding to Ember, on the same data. ``SVI`` with ``Trace_ELBO`` fits a MAP guide (``Delta`` sites: no random
draw, so both runs take the same steps): a Normal prior over the weights, a HalfCauchy prior over the noise
(a ``positive``-constrained ``pyro.param``), a ``plate`` over the data. Also the log density of a conditioned
trace, constraint transforms and their Jacobians, and the param store's saved state."""

import sys

import numpy as np
import pyro
import pyro.distributions as dist
import torch
from pyro import poutine
from pyro.distributions import constraints
from pyro.infer import SVI, Trace_ELBO
from pyro.optim import Adam

out, mode = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
rng = np.random.default_rng(0)
x = torch.tensor(rng.standard_normal((20, 3)))
y = x @ torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64) + 0.3 * torch.tensor(rng.standard_normal(20))
res = {}


def model(x, y):
    w = pyro.sample("w", dist.Normal(torch.zeros(3, dtype=torch.float64), 1.0).to_event(1))
    sigma = pyro.sample("sigma", dist.HalfCauchy(torch.tensor(1.0, dtype=torch.float64)))
    with pyro.plate("data", len(x)):
        pyro.sample("obs", dist.Normal(x @ w, sigma), obs=y)


def guide(x, y):
    w = pyro.param("w_loc", torch.zeros(3, dtype=torch.float64))
    sigma = pyro.param("sigma_loc", torch.tensor(1.0, dtype=torch.float64), constraint=constraints.positive)
    pyro.sample("w", dist.Delta(w).to_event(1))
    pyro.sample("sigma", dist.Delta(sigma))


pyro.clear_param_store()
svi = SVI(model, guide, Adam({"lr": 0.05}), loss=Trace_ELBO())
res["losses"] = np.array([svi.step(x, y) for _ in range(40)])
res["w"] = pyro.param("w_loc").detach().numpy()
res["sigma"] = pyro.param("sigma_loc").detach().numpy()
res["sigma_unconstrained"] = pyro.get_param_store()._params["sigma_loc"].detach().numpy()
state = pyro.get_param_store().get_state()
pyro.clear_param_store()
pyro.get_param_store().set_state(state)
res["restored_w"] = pyro.param("w_loc").detach().numpy()

cond = poutine.condition(model, data={"w": torch.tensor([0.5, -1.0, 0.0], dtype=torch.float64),
                                      "sigma": torch.tensor(0.7, dtype=torch.float64)})  # fmt: skip
tr = poutine.trace(cond).get_trace(x, y)
tr.compute_log_prob()
res["log_prob_sum"] = np.array(tr.log_prob_sum().item())
res["site_log_probs"] = np.array([tr.nodes[n]["log_prob_sum"].item() for n in ("w", "sigma", "obs")])

u = torch.tensor(rng.standard_normal((2, 4)))
CONSTRAINTS = {"simplex": constraints.simplex, "positive": constraints.positive,
               "interval": constraints.interval(-1.0, 2.0), "unit_interval": constraints.unit_interval}  # fmt: skip
for name, c in CONSTRAINTS.items():
    t = dist.transforms.biject_to(c)
    v = t(u)
    res[f"biject.{name}"] = v.numpy()
    res[f"logdet.{name}"] = t.log_abs_det_jacobian(u, v).numpy()
    res[f"inverse.{name}"] = t.inv(v).numpy()
res["check.positive"] = constraints.positive.check(u).numpy()
np.savez(f"{out}/{mode}.npz", **res)
print("done")
