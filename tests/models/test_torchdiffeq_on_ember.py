"""torchdiffeq on Ember through the switch PyTorch users make (``sys.modules["torch"] = ember`` before
``import torchdiffeq``): the same neural ODE program (``torchdiffeq_prog.py``, float64) runs under PyTorch and under
Ember from the same weights and gives the same solutions and gradients: rk4 and dopri5 with backpropagation through
the solver, ``odeint_adjoint``, ``odeint_event`` and SGD steps.

Running it found that Ember tracked writes PyTorch does not: through ``.data`` (Ember's shared the tensor's version
counter) and to a custom Function's inputs it did not save (Ember checked them all); torchdiffeq's Runge-Kutta step
fills its scratch tensor that way (``tests/autograd/test_untracked_writes.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from ._alias_programs import results_fixture

pytest.importorskip("torch")
pytest.importorskip("torchdiffeq")

results = results_fixture("torchdiffeq_prog.py", in_its_folder=True)  # real PyTorch, then through the alias


@pytest.mark.parametrize("tag", ["rk4", "dopri5", "adjoint"])
def test_solutions_and_gradients_match_pytorch(results, tag):
    torch_run, ember_run = results
    assert set(torch_run) == set(ember_run)
    keys = [f"{tag}_ys"] + [k for k in torch_run if k.startswith(f"{tag}_grad.")]
    assert len(keys) == 5
    for k in keys:
        assert ember_run[k].dtype == np.float64, k
        np.testing.assert_allclose(ember_run[k], torch_run[k], rtol=1e-10, atol=1e-12, err_msg=k)


def test_adjoint_gradients_agree_with_backpropagation(results):
    ember_run = results[1]
    for k in (k for k in ember_run if k.startswith("adjoint_grad.")):  # two ways to the same gradient
        np.testing.assert_allclose(
            ember_run[k], ember_run[k.replace("adjoint", "dopri5")], rtol=1e-5, atol=1e-6, err_msg=k
        )


def test_event_time_and_training_match_pytorch(results):
    torch_run, ember_run = results
    for k in ("event_t", "event_y", "event_grad_y0"):
        np.testing.assert_allclose(ember_run[k], torch_run[k], rtol=1e-9, atol=1e-11, err_msg=k)
    assert ember_run["sgd_losses"][-1] < ember_run["sgd_losses"][0]
    for k in ["sgd_losses"] + [k for k in torch_run if k.startswith("trained.")]:
        np.testing.assert_allclose(ember_run[k], torch_run[k], rtol=1e-12, atol=1e-14, err_msg=k)
