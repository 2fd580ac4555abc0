"""Tensor's fields are set in one place, ``Tensor._init``; every constructor path leaves the same fields. The
hot path of ``Op.apply`` inlines ``_init`` (a call there costs measurably per op): this keeps it in step."""

from __future__ import annotations

import copy
import pickle

import numpy as np

import ember
from ember._tensor import Tensor
from ember.nn import Param

FIELDS = [
    s for c in Tensor.__mro__ for s in getattr(c, "__slots__", ()) if s not in ("__weakref__", "_data", "_backend")
]


def _fields(t: Tensor) -> dict[str, object]:
    return {f: getattr(t, f) for f in FIELDS}  # an unset slot raises AttributeError


def test_every_constructor_path_sets_the_fields_of_init() -> None:
    ref = _fields(Tensor._make(np.zeros(2), ember.ones(1)._backend))
    assert ref["_requires_grad"] is False and ref["_grad"] is None and ref["_creator"] is None
    x = ember.ones(2)
    made = [
        Tensor([1.0, 2.0]),
        x.exp(),
        x + x,
        ember.tensor([1.0]),
        copy.deepcopy(x),
        pickle.loads(pickle.dumps(x)),
    ]
    for t in made:
        assert _fields(t) == ref, t
    assert {**_fields(x.detach()), "_vcl": None} == ref  # a detached alias shares the version counter
    with ember.no_grad():
        assert _fields(ember.ones(2, requires_grad=True) * 2) == ref


def test_recorded_results_and_params_set_every_field() -> None:
    w = ember.ones(2, requires_grad=True)
    y = (w * 3).exp()  # Op.apply's inlined path, recording
    f = _fields(y)
    assert f["_requires_grad"] is True and f["_creator"] is not None and f["_grad"] is None
    p = Param(ember.ones(3))
    assert _fields(p)["_requires_grad"] is True and p.grad is None and p._vc == [0]


def test_tensor_classes_have_no_getattr_hook() -> None:
    # A ``__getattr__`` (or ``__getattribute__``) on Tensor makes CPython 3.11 read every attribute of every tensor
    # the slow, unspecialised way (~9% of a small op); the operator methods are class attributes instead.
    for cls in (Tensor, Param):
        assert not any("__getattr__" in c.__dict__ or "__getattribute__" in c.__dict__ for c in cls.__mro__[:-1]), cls


def test_registered_methods_of_every_kind_are_bound() -> None:
    import functools

    from ember import ops

    ops.register_method("_test_scaled", functools.partial(lambda x, k: x * k, k=2.0))  # not a Python function
    try:
        assert ember.ones(2)._test_scaled().tolist() == [2.0, 2.0]
        t = ember.zeros(2)
        assert t.exp_() is t and t.tolist() == [1.0, 1.0]  # an in-place variant, bound at import
    finally:
        ops.METHODS.pop("_test_scaled")
        delattr(Tensor, "_test_scaled")
    try:
        ember.ones(1).no_such_method()
    except AttributeError as e:
        assert "no_such_method" in str(e)
    else:
        raise AssertionError("an unknown attribute must raise AttributeError")
