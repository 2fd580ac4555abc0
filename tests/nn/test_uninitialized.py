"""``nn.UninitializedParameter``/``UninitializedBuffer`` and lazy modules' placeholders beside PyTorch: the same
``isinstance`` answers, state dict entries, ``materialize``, shape refusal, and the placeholder object becoming the
module's parameter at the first call (keeping a ``.to()`` dtype)."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def _name(v):
    return {"Param": "Parameter"}.get(type(v).__name__, type(v).__name__)


def _lazy(lib):
    nn, out = lib.nn, []
    m = nn.LazyLinear(3)
    w = m.weight
    out.append({k: _name(v) for k, v in m.state_dict().items()})
    out.append([isinstance(w, nn.UninitializedParameter), isinstance(w, nn.Parameter), nn.parameter.is_lazy(w),
                m.has_uninitialized_params(), repr(w), w.requires_grad])  # fmt: skip
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        _ = w.shape
    m(lib.ones(2, 4))
    out.append([m.weight is w, _name(w), tuple(w.shape), type(m).__name__, w.requires_grad, nn.parameter.is_lazy(w),
                isinstance(w, nn.UninitializedParameter)])  # fmt: skip
    bn = nn.LazyBatchNorm1d()
    out.append({k: _name(v) for k, v in bn.state_dict().items()})
    bn(lib.ones(3, 5))
    out.append({k: tuple(v.shape) for k, v in bn.state_dict().items()})
    m = nn.LazyLinear(3, bias=False)
    out.append([m.bias, list(dict(m.named_parameters()))])
    m = nn.LazyLinear(3).double()
    m(lib.ones(2, 4, dtype=lib.float64))
    out.append(str(m.weight.dtype).replace("torch.", "").replace("ember.", ""))
    a, b = nn.LazyLinear(3), nn.LazyLinear(3)
    out.append([repr(b.load_state_dict(a.state_dict())), b.has_uninitialized_params()])
    return out


def test_lazy_placeholders_match_torch():
    assert _lazy(torch) == _lazy(ember)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_materialize_as_torch(lib):
    p = lib.nn.UninitializedParameter(requires_grad=False, dtype=lib.float64)
    p.materialize((2, 3))
    assert isinstance(p, lib.nn.Parameter) and not isinstance(p, lib.nn.UninitializedParameter)
    assert tuple(p.shape) == (2, 3) and p.dtype == lib.float64 and not p.requires_grad
    q = lib.nn.UninitializedParameter()
    q.materialize((4,))
    assert q.requires_grad and tuple(q.shape) == (4,)
    b = lib.nn.UninitializedBuffer()
    assert not lib.nn.parameter.is_lazy(p) and lib.nn.parameter.is_lazy(b)
    b.materialize((2,))
    assert not b.requires_grad and tuple(b.shape) == (2,)


def test_a_lazy_state_cannot_fill_a_built_module():
    built = ember.nn.Linear(4, 3)
    with pytest.raises(RuntimeError, match="uninitialized parameter"):
        built.load_state_dict(ember.nn.LazyLinear(3).state_dict())
