"""``biject_to`` and ``transform_to``: from a constraint to a transform onto it (PyTorch's registries).

``biject_to(c)`` is a bijection from unconstrained reals onto ``c`` (for HMC-style reparameterisation);
``transform_to(c)`` need not be bijective (for optimising a constrained parameter).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]

_Factory = Callable[[Any], transforms.Transform]


class ConstraintRegistry:
    """A registry of constraint types to transform factories; call it with a constraint to get its transform."""

    def __init__(self) -> None:
        self._registry: dict[type, _Factory] = {}

    def register(self, constraint: Any, factory: _Factory | None = None) -> Any:
        """Register ``factory(constraint) -> Transform`` for a constraint (its type) or a Constraint subclass."""
        if factory is None:
            return lambda f: self.register(constraint, f)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not (isinstance(constraint, type) and issubclass(constraint, constraints.Constraint)):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: Any) -> transforms.Transform:
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _real(c: Any) -> transforms.Transform:
    return transforms.identity_transform


def _greater_than(c: Any) -> transforms.Transform:
    return transforms.ComposeTransform([transforms.ExpTransform(), transforms.AffineTransform(c.lower_bound, 1)])


def _less_than(c: Any) -> transforms.Transform:
    return transforms.ComposeTransform([transforms.ExpTransform(), transforms.AffineTransform(c.upper_bound, -1)])


def _interval(c: Any) -> transforms.Transform:
    lo, hi = c.lower_bound, c.upper_bound
    if isinstance(lo, (int, float)) and lo == 0 and isinstance(hi, (int, float)) and hi == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(), transforms.AffineTransform(lo, hi - lo)])


for _registry in (biject_to, transform_to):
    _registry.register(constraints.real, _real)
    # positive and nonnegative are instances of greater_than(_eq): PyTorch's later registration wins for them too
    _registry.register(constraints.greater_than, _greater_than)
    _registry.register(constraints.greater_than_eq, _greater_than)
    _registry.register(constraints.less_than, _less_than)
    _registry.register(constraints.interval, _interval)
    _registry.register(constraints.half_open_interval, _interval)
    _registry.register(constraints.real_vector, lambda c: transforms.IndependentTransform(_real(c), 1))
biject_to.register(
    constraints.independent,
    lambda c: transforms.IndependentTransform(biject_to(c.base_constraint), c.reinterpreted_batch_ndims),
)
transform_to.register(
    constraints.independent,
    lambda c: transforms.IndependentTransform(transform_to(c.base_constraint), c.reinterpreted_batch_ndims),
)
biject_to.register(constraints.simplex, lambda c: transforms.StickBreakingTransform())
transform_to.register(constraints.simplex, lambda c: transforms.SoftmaxTransform())
transform_to.register(constraints.lower_cholesky, lambda c: transforms.LowerCholeskyTransform())
transform_to.register(constraints.positive_definite, lambda c: transforms.PositiveDefiniteTransform())
transform_to.register(constraints.positive_semidefinite, lambda c: transforms.PositiveDefiniteTransform())
for _registry in (biject_to, transform_to):
    _registry.register(constraints.corr_cholesky, lambda c: transforms.CorrCholeskyTransform())
biject_to.register(constraints.cat, lambda c: transforms.CatTransform([biject_to(x) for x in c.cseq], c.dim, c.lengths))
transform_to.register(
    constraints.cat, lambda c: transforms.CatTransform([transform_to(x) for x in c.cseq], c.dim, c.lengths)
)
biject_to.register(constraints.stack, lambda c: transforms.StackTransform([biject_to(x) for x in c.cseq], c.dim))
transform_to.register(constraints.stack, lambda c: transforms.StackTransform([transform_to(x) for x in c.cseq], c.dim))
