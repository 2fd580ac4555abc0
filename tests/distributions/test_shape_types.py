"""A distribution's ``batch_shape``/``event_shape`` are ``Size`` objects, as PyTorch's (they print and compare as
its ``torch.Size``)."""

import pytest

import ember
from ember import distributions as D

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("build", [
    lambda lib: lib.distributions.Normal(lib.zeros(2), lib.ones(2)),
    lambda lib: lib.distributions.Independent(lib.distributions.Normal(lib.zeros(2, 3), lib.ones(2, 3)), 1),
    lambda lib: lib.distributions.Dirichlet(lib.ones(4, 3)),
    lambda lib: lib.distributions.Normal(lib.zeros(2), lib.ones(2)).expand((5, 2)),
])  # fmt: skip
def test_shapes_are_sizes_as_torch(build):
    e, t = build(ember), build(torch)
    for name in ("batch_shape", "event_shape"):
        assert type(getattr(e, name)) is ember.Size
        assert repr(getattr(e, name)).replace("ember.", "torch.") == repr(getattr(t, name))
    assert type(D.Normal(ember.zeros(2), ember.ones(2)).sample((3,)).shape) is ember.Size
