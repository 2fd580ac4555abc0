"""Weight pruning (``torch.nn.utils.prune``): a parameter ``name`` is replaced by ``name_orig`` (the trained
parameter) and a ``name_mask`` buffer; a forward pre-hook recomputes ``name = name_orig * name_mask`` before each
call. Pruning the same parameter again combines the masks (a ``PruningContainer``); ``remove`` makes the pruning
permanent (``name`` is a parameter again, holding the masked values).
"""

from __future__ import annotations

import abc
import numbers
from collections.abc import Iterable
from typing import Any

from ..._creation import ones_like, rand, rand_like, zeros_like
from ..._param import Param
from ..._tensor import Tensor
from ...autograd import no_grad
from ...ops import abs, cat, kthvalue, norm, topk
from ..module import Module

__all__ = [
    "BasePruningMethod",
    "CustomFromMask",
    "Identity",
    "L1Unstructured",
    "LnStructured",
    "PruningContainer",
    "RandomStructured",
    "RandomUnstructured",
    "custom_from_mask",
    "global_unstructured",
    "identity",
    "is_pruned",
    "l1_unstructured",
    "ln_structured",
    "random_structured",
    "random_unstructured",
    "remove",
]


class BasePruningMethod(abc.ABC):
    """A way to compute a mask (``compute_mask``, which subclasses define) and the forward pre-hook applying it."""

    PRUNING_TYPE: str = "unstructured"  # "unstructured", "structured" (with ``dim``) or "global"
    _tensor_name: str | None = None

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._name(), self.apply_mask(module))

    @abc.abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask for ``t`` given the mask so far (ones before any pruning)."""

    def _name(self) -> str:
        if self._tensor_name is None:
            raise RuntimeError(f"{type(self).__name__}: not applied to a parameter yet")
        return self._tensor_name

    def apply_mask(self, module: Module) -> Tensor:
        """``name_orig * name_mask`` (differentiable in ``name_orig``)."""
        name = self._name()
        orig, mask = getattr(module, name + "_orig"), getattr(module, name + "_mask")
        return mask.to(orig.dtype) * orig  # type: ignore[no-any-return]

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, importance_scores: Tensor | None = None,
              **kwargs: Any) -> BasePruningMethod:  # fmt: skip
        """Prune ``module.name`` with ``cls(*args, **kwargs)``, combined with any pruning already there."""
        method = _composite(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None and tuple(importance_scores.shape) != tuple(orig.shape):
            raise ValueError(f"importance_scores of shape {tuple(importance_scores.shape)} must have the shape of "
                             f"parameter {name} {tuple(orig.shape)}")  # fmt: skip
        scores = orig if importance_scores is None else importance_scores
        first = not isinstance(method, PruningContainer)
        if first:
            if not isinstance(orig, Param):
                raise TypeError(f"prune: {type(module).__name__}.{name} is not a parameter")
            delattr(module, name)
            module.register_parameter(name + "_orig", orig)
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            with no_grad():
                mask = method.compute_mask(scores.detach(), default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # put the parameter back as it was
                delattr(module, name + "_orig")
                module.register_parameter(name, orig)
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None) -> Tensor:
        """``t`` times its mask (no module involved)."""
        scores = t if importance_scores is None else importance_scores
        mask = ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(scores, default_mask=mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``name`` becomes a parameter holding the masked values."""
        name = self._name()
        weight = self.apply_mask(module)
        if name in module.__dict__:
            del module.__dict__[name]
        orig = getattr(module, name + "_orig")
        with no_grad():
            orig.copy_(weight.detach())
        delattr(module, name + "_orig")
        delattr(module, name + "_mask")
        module.register_parameter(name, orig)


def _composite(cls: type[BasePruningMethod], module: Module, name: str, *args: Any, **kwargs: Any) -> Any:
    """``cls(*args, **kwargs)`` for ``name``, joined with the pruning hook already on it (its hook removed)."""
    hooks = module._pre_hooks
    old = [k for k, h in hooks.items() if isinstance(h, BasePruningMethod) and h._tensor_name == name]
    if len(old) > 1:
        raise RuntimeError(f"prune: {len(old)} pruning hooks on parameter {name}")
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if not old:
        return method
    prev = hooks.pop(old[0])
    if isinstance(prev, PruningContainer):
        prev.add_pruning_method(method)
        return prev
    return PruningContainer(prev, method)


class PruningContainer(BasePruningMethod):
    """Pruning methods applied one after the other to one parameter: each new one acts on what is left."""

    def __init__(self, *methods: Any) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(methods) == 1 and not isinstance(methods[0], BasePruningMethod):
            methods = tuple(methods[0])
        for m in methods:
            if self._tensor_name is None:
                self._tensor_name = m._tensor_name
            self.add_pruning_method(m)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        if not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method).__name__} is not a BasePruningMethod subclass")
        if self._tensor_name != method._tensor_name:
            raise ValueError(f"can only add pruning methods acting on the parameter {self._tensor_name} to this "
                             f"container; got one for {method._tensor_name}")  # fmt: skip
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Any:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The last method's mask over the part the earlier ones left (entries, whole channels, or all)."""
        method = self._pruning_methods[-1]
        mask = default_mask.to(t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            slc: Any = default_mask == 1
        elif kind == "structured":
            dim = getattr(method, "dim", None)
            if dim is None:
                raise AttributeError('pruning methods of PRUNING_TYPE "structured" need the attribute `dim`')
            d = dim + t.ndim if dim < 0 else dim
            if not 0 <= d < t.ndim:
                raise IndexError(f"dim {dim} is out of bounds for a tensor with {t.ndim} dims")
            keep = default_mask.sum(dim=[i for i in range(t.ndim) if i != d]) != 0  # channels not all pruned
            slc = tuple([slice(None)] * d + [keep])
        elif kind == "global":
            slc = tuple([slice(None)] * t.ndim)
        else:
            raise ValueError(f"unrecognized PRUNING_TYPE {kind!r}")
        mask[slc] = method.compute_mask(t[slc], default_mask=default_mask[slc]).to(mask.dtype)
        return mask


def _check_amount(amount: Any) -> None:
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount!r}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and int(amount) < 0) or (
        not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0
    ):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count(amount: Any, size: int) -> int:
    """How many of ``size`` entries (or channels) ``amount`` prunes (a count, or a fraction rounded)."""
    if isinstance(amount, numbers.Integral):
        if int(amount) > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
        return int(amount)
    return round(amount * size)


def _structured(t: Tensor, dim: int) -> int:
    if t.ndim <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                         f"shape {tuple(t.shape)} with {t.ndim} dims")  # fmt: skip
    if not -t.ndim <= dim < t.ndim:
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")
    return dim % t.ndim


def _channels(t: Tensor, dim: int, keep: Tensor) -> Tensor:
    """A mask of ``t``'s shape, ones on the channels ``keep`` (indices or a bool mask) along ``dim``."""
    mask = zeros_like(t)
    mask[tuple([slice(None)] * dim + [keep])] = 1
    return mask


class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones): the pruning hooks without pruning."""

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name)


def _unstructured(default_mask: Tensor, scores: Tensor, amount: Any, largest: bool) -> Tensor:
    """``default_mask`` with 0 at the ``amount`` entries of the largest (or smallest) ``scores``."""
    k = _count(amount, scores.numel())
    mask = default_mask.clone()
    if k:
        mask.view(-1)[topk(scores.reshape(-1), k, largest=largest).indices] = 0
    return mask


class RandomUnstructured(BasePruningMethod):
    """Prune ``amount`` (a count or a fraction) of the entries, chosen at random."""

    def __init__(self, amount: Any) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return _unstructured(default_mask, rand_like(t), self.amount, largest=True)

    @classmethod
    def apply(cls, module: Module, name: str, amount: Any) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prune ``amount`` of the entries with the smallest absolute values."""

    def __init__(self, amount: Any) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return _unstructured(default_mask, abs(t), self.amount, largest=False)

    @classmethod
    def apply(cls, module: Module, name: str, amount: Any, importance_scores: Tensor | None = None) -> Any:  # type: ignore[override]
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prune ``amount`` of the channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        d = _structured(t, self.dim)
        n = t.shape[d]
        k = _count(self.amount, n)
        if not k:
            return default_mask
        prob = rand(n, device=t.device)
        threshold = kthvalue(prob, k).values
        return _channels(t, d, prob > threshold) * default_mask.to(t.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, amount: Any, dim: int = -1) -> Any:  # type: ignore[override]
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prune ``amount`` of the channels along ``dim`` with the smallest ``n``-norm (``n`` as ``torch.norm``'s p)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, n: Any, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        d = _structured(t, self.dim)
        size = t.shape[d]
        k = _count(self.amount, size)
        if not k:
            return default_mask
        norms = norm(t, p=self.n, dim=[i for i in range(t.ndim) if i != d])
        keep = topk(norms, size - k, largest=True).indices
        return _channels(t, d, keep) * default_mask.to(t.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, amount: Any, n: Any, dim: int,  # type: ignore[override]
              importance_scores: Tensor | None = None) -> Any:  # fmt: skip
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune where a given mask is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise ValueError(f"custom_from_mask: mask of shape {tuple(self.mask.shape)} does not fit "
                             f"{tuple(default_mask.shape)}")  # fmt: skip
        return default_mask * self.mask.to(default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> Any:  # type: ignore[override]
        return super().apply(module, name, mask=mask)


def identity(module: Module, name: str) -> Module:
    """Add pruning hooks to ``module.name`` without pruning anything."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: Any) -> Module:
    """Prune ``amount`` of ``module.name``'s entries at random."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: Any, importance_scores: Tensor | None = None) -> Module:
    """Prune ``amount`` of ``module.name``'s entries with the smallest absolute value (or importance score)."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: Any, dim: int) -> Module:
    """Prune ``amount`` of ``module.name``'s channels along ``dim`` at random."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: Any, n: Any, dim: int,
                  importance_scores: Tensor | None = None) -> Module:  # fmt: skip
    """Prune ``amount`` of ``module.name``'s channels along ``dim`` with the smallest ``n``-norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.name`` where ``mask`` is 0."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(
    parameters: Iterable[tuple[Module, str]],
    pruning_method: type[BasePruningMethod],
    importance_scores: dict[tuple[Module, str], Tensor] | None = None,
    **kwargs: Any,
) -> None:
    """Prune ``(module, name)`` pairs together: ``pruning_method(**kwargs)`` (unstructured) picks from all their
    entries at once, so some parameters lose more than others."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    params = list(parameters)
    scores = {} if importance_scores is None else importance_scores
    if not isinstance(scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    flat = cat([scores.get((m, n), getattr(m, n)).detach().reshape(-1) for m, n in params])
    masks = [getattr(m, n + "_mask", None) for m, n in params]
    default = cat([(ones_like(getattr(m, n)) if k is None else k).reshape(-1) for (m, n), k in zip(params, masks)])
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")  # fmt: skip
    method._tensor_name = "temp"
    container = PruningContainer(method)
    with no_grad():
        final = container.compute_mask(flat, default)
    at = 0
    for m, n in params:
        size = getattr(m, n).numel()
        custom_from_mask(m, n, mask=final[at : at + size].view_as(getattr(m, n)))
        at += size


def remove(module: Module, name: str) -> Module:
    """Make ``module.name``'s pruning permanent and drop its hook, ``name_orig`` and ``name_mask``."""
    for k, hook in list(module._pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or any sub-module has a pruning hook."""
    return any(isinstance(h, BasePruningMethod) for m in module.modules() for h in m._pre_hooks.values())
