"""``optimizer.state[p]``: PyTorch programs index the state with the parameter itself; the same code runs here
under both libraries and must see the same values."""

import numpy as np
import pytest

import ember
from ember import optim
from ember.testing import torch_or_none

torch = torch_or_none()
LIBS = [ember] + ([torch] if torch is not None else [])


def _trained(lib, kind, steps=3):
    rng = np.random.default_rng(0)
    w0, xs = rng.standard_normal((3, 4)), [rng.standard_normal((5, 4)) for _ in range(steps)]
    p = (ember.nn.Param if lib is ember else torch.nn.Parameter)(lib.tensor(w0))
    o = optim if lib is ember else torch.optim
    opt = o.SGD([p], lr=0.1, momentum=0.9) if kind == "sgd" else o.Adam([p], lr=0.01)
    for x in xs:
        opt.zero_grad()
        (p @ lib.tensor(x).T).tanh().sum().backward()
        opt.step()
    return p, opt


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_state_indexed_by_the_parameter(lib):
    p, opt = _trained(lib, "adam")
    st = opt.state[p]
    assert p in opt.state and len(opt.state) == 1
    assert sorted(st) == ["exp_avg", "exp_avg_sq", "step"]
    assert isinstance(st["exp_avg"], lib.Tensor) and st["exp_avg"].shape == p.shape
    assert int(st["step"]) == 3
    assert opt.state.get(p) is not None


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_state_values_match_pytorch(kind):
    (pe, oe), (pt, ot) = _trained(ember, kind), _trained(torch, kind)
    se, st = oe.state[pe], ot.state[pt]
    assert sorted(se) == sorted(st)
    for name in se:
        np.testing.assert_allclose(_np(se[name]), _np(st[name]), rtol=1e-10, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_an_in_place_change_to_a_state_tensor_reaches_the_next_step(lib):
    # zeroing the momentum buffer through opt.state[p] makes the next step plain SGD, in both libraries
    p, opt = _trained(lib, "sgd")
    opt.state[p]["momentum_buffer"].zero_()
    before = _np(p).copy()
    opt.zero_grad()
    p.sum().backward()  # gradient of ones
    opt.step()
    np.testing.assert_allclose(_np(p), before - 0.1, rtol=0, atol=1e-12)


def test_a_parameter_without_state_reads_empty_and_refuses_writes():
    p = ember.nn.Param(ember.zeros(2))
    opt = optim.Adam([p])
    assert p not in opt.state and len(opt.state[p]) == 0 and opt.state.get(p) is None
    with pytest.raises(KeyError, match="no state yet"):
        opt.state[p]["exp_avg"] = ember.zeros(2)
    assert len(opt.state) == 0


def test_id_keys_and_state_dict_still_work():
    p, opt = _trained(ember, "adam")
    assert opt.state[p.id]["step"] == 3  # Ember's own key: the raw state
    with pytest.raises(KeyError):
        opt.state[p]["_backend"]
    sd = opt.state_dict()
    opt2 = optim.Adam([p], lr=0.01)
    opt2.load_state_dict(sd)
    np.testing.assert_array_equal(_np(opt2.state[p]["exp_avg_sq"]), _np(opt.state[p]["exp_avg_sq"]))
    opt2.state[p]["exp_avg"].zero_()  # a copy: the first optimizer's state is untouched
    assert np.abs(_np(opt.state[p]["exp_avg"])).min() > 0


def test_writing_a_state_tensor_stores_its_values():
    p, opt = _trained(ember, "sgd")
    opt.state[p]["momentum_buffer"] = ember.ones(3, 4, dtype=ember.float64)
    np.testing.assert_array_equal(_np(opt.state[p]["momentum_buffer"]), np.ones((3, 4)))
    assert "momentum_buffer" in opt.state[p.id]
