"""``Distribution``: the interface every distribution implements (``torch.distributions.Distribution``).

Shapes: a sample has shape ``sample_shape + batch_shape + event_shape``; ``log_prob`` returns one value
per batch element (shape ``sample_shape + batch_shape``). ``rsample`` draws reparameterised samples
that are differentiable in the parameters; ``sample`` draws without a graph.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .._size import Size
from .._tensor import Tensor
from ..autograd import no_grad
from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


def _size(shape: Any) -> Size:
    if isinstance(shape, int):
        return Size((shape,))
    return Size(int(s) for s in shape)


class Distribution:
    """Base of all distributions. Subclasses set ``arg_constraints``, ``support`` and the methods they can."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = True  # PyTorch validates by default (``__debug__``)
    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {}
    support: Any = None

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions created without ``validate_args``."""
        if value not in (True, False):
            raise ValueError("set_default_validate_args: expected True or False")
        Distribution._validate_args = value

    def __init__(self, batch_shape: Any = (), event_shape: Any = (), validate_args: bool | None = None) -> None:
        self._batch_shape = _size(batch_shape)
        self._event_shape = _size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param, None), lazy_property):
                    continue  # a parameter given in another form (probs vs logits)
                value = getattr(self, param)
                if not isinstance(value, Tensor):
                    continue
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} to satisfy the constraint {constraint!r}, but found invalid "
                        f"values:\n{value}"
                    )

    # -- shapes -------------------------------------------------------------------------------------
    @property
    def batch_shape(self) -> Size:
        return self._batch_shape if type(self._batch_shape) is Size else Size(self._batch_shape)

    @property
    def event_shape(self) -> Size:
        return self._event_shape if type(self._event_shape) is Size else Size(self._event_shape)

    def _extended_shape(self, sample_shape: Any = ()) -> tuple[int, ...]:
        return _size(sample_shape) + self._batch_shape + self._event_shape

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        """A distribution whose parameters are broadcast to ``batch_shape`` (views, no copies)."""
        raise NotImplementedError(f"{type(self).__name__}.expand is not implemented")

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and type(self).__init__ is not cls.__init__:  # type: ignore[misc]
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom __init__ method "
                "must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def _expand_params(self, cls: type, names: tuple[str, ...], batch_shape: Any, _instance: Any) -> Any:
        """``expand`` for distributions whose state is the tensors ``names`` (those already computed)."""
        new = self._get_checked_instance(cls, _instance)
        shape = tuple(batch_shape)
        for name in names:
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(*shape))
        Distribution.__init__(new, shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    # -- moments ------------------------------------------------------------------------------------
    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    # -- sampling and densities ---------------------------------------------------------------------
    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Samples of shape ``sample_shape + batch_shape + event_shape``, outside the autograd graph."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """Reparameterised samples: differentiable in the distribution's parameters."""
        raise NotImplementedError(f"{type(self).__name__} has no rsample (it is not reparameterisable)")

    def sample_n(self, n: int) -> Tensor:
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no log_prob")

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no cdf")

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no icdf")

    def entropy(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no entropy")

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no enumerable support")

    # -- validation ---------------------------------------------------------------------------------
    def _validate_sample(self, value: Tensor) -> None:
        name = type(self).__name__
        if not isinstance(value, Tensor):
            raise ValueError(f"{name}: the value to score must be a Tensor, got {type(value).__name__}")
        event_dim = len(self._event_shape)
        if value.ndim < event_dim or tuple(value.shape[value.ndim - event_dim :]) != self._event_shape:
            raise ValueError(
                f"{name}: the rightmost dims of the value {tuple(value.shape)} must match the event shape "
                f"{self._event_shape}"
            )
        actual = tuple(value.shape)
        expected = self.batch_shape + self.event_shape
        for i, j in zip(reversed(actual), reversed(expected), strict=False):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    f"{name}: value of shape {actual} cannot broadcast with batch_shape + event_shape {expected}"
                )
        support = self.support
        if support is None or constraints.is_dependent(support):
            return
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {actual}) to be within the support "
                f"({support!r}) of the distribution {self!r}, but found invalid values:\n{value}"
            )

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{p}: {self.__dict__[p].item() if self.__dict__[p].numel() == 1 else tuple(self.__dict__[p].shape)}"
            for p in names
            if isinstance(self.__dict__[p], Tensor)
        )
        return f"{type(self).__name__}({args})"
