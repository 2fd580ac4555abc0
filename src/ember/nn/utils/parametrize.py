"""PyTorch's ``torch.nn.utils.parametrize``: a module's tensor computed from other tensors by small modules.

``register_parametrization(module, "weight", p)`` moves the parameter to ``module.parametrizations.weight.original``
(``original0``, ``original1``, ... when ``p.right_inverse`` splits it) and makes ``module.weight`` a property that
returns ``p(original)`` at each read; assigning ``module.weight = value`` stores ``p.right_inverse(value)``. As in
PyTorch, the module's class becomes a subclass (``ParametrizedLinear``) holding the property, and the state dict
keys are PyTorch's (``parametrizations.weight.original``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..._tensor import Tensor
from ...autograd._grad_mode import no_grad
from ..container import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Param

__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization", "remove_parametrizations",
           "type_before_parametrizations"]  # fmt: skip

_CACHE: dict[tuple[int, str], Tensor] | None = None


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Within the block each parametrized tensor is computed once and reused (as PyTorch's ``cached``)."""
    global _CACHE
    outer = _CACHE
    _CACHE = {} if outer is None else outer
    try:
        yield
    finally:
        _CACHE = outer


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the tensor's ``original`` parameter(s)."""

    is_tensor: bool
    ntensors: int

    def __init__(self, modules: list[Module], original: Tensor, unsafe: bool = False) -> None:
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            new = original
            for p in reversed(modules):
                if hasattr(p, "right_inverse"):
                    with contextlib.suppress(NotImplementedError):  # (as PyTorch: the original is kept)
                        new = p.right_inverse(new)
        if isinstance(new, (tuple, list)):
            self.is_tensor = False
            self.ntensors = len(new)
            for i, t in enumerate(new):
                self.register_parameter(f"original{i}", Param(t.detach(), requires_grad=original.requires_grad))
        else:
            self.is_tensor = True
            self.ntensors = 1
            if isinstance(original, Param) and new is original:
                self.original = original  # the same parameter: optimizers holding it keep working
            else:
                self.original = Param(new.detach(), requires_grad=original.requires_grad)

    def right_inverse(self, value: Tensor) -> None:
        """Store ``value`` through the parametrizations' right inverses, last first."""
        with no_grad():
            for p in reversed(list(self)):
                if not hasattr(p, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(p).__name__} does not implement right_inverse.")
                value = p.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")  # fmt: skip
            elif len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                                 f"Got a sequence of length {len(value)}.")  # fmt: skip
            parts = (value,) if self.is_tensor else tuple(value)
            for i, part in enumerate(parts):
                target = self.original if self.is_tensor else getattr(self, f"original{i}")
                target.copy_(part)

    def forward(self) -> Tensor:
        x = self[0](self.original) if self.is_tensor else self[0](*(getattr(self, f"original{i}") for i in
                                                                   range(self.ntensors)))  # fmt: skip
        for p in list(self)[1:]:
            x = p(x)
        return x  # type: ignore[no-any-return]


def _property(name: str) -> property:
    def get(self: Module) -> Tensor:
        key = (id(self), name)
        if _CACHE is not None and key in _CACHE:
            return _CACHE[key]
        value = self.parametrizations[name]()
        if _CACHE is not None:
            _CACHE[key] = value
        return value  # type: ignore[no-any-return]

    def set_(self: Module, value: Tensor) -> None:
        self.parametrizations[name].right_inverse(value)

    return property(get, set_)


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:  # fmt: skip
    """Make ``module.<tensor_name>`` the output of ``parametrization`` (added after any already there)."""
    if is_parametrized(module, tensor_name):
        module.parametrizations[tensor_name].append(parametrization)
        return module
    original = getattr(module, tensor_name)
    if not isinstance(original, Tensor):
        raise ValueError(f"register_parametrization: {type(module).__name__}.{tensor_name} is not a tensor")
    if not unsafe:
        with no_grad():
            probe = parametrization(original)
        if not isinstance(probe, Tensor) or probe.shape != original.shape or probe.dtype != original.dtype:
            raise ValueError(
                f"register_parametrization: the parametrization must return a tensor of the shape and dtype of "
                f"{tensor_name!r} ({tuple(original.shape)}, {original.dtype}); pass unsafe=True to allow another"
            )
    plist = ParametrizationList([parametrization], original, unsafe)
    del module._params[tensor_name]
    if not is_parametrized(module):
        cls = type(module)
        sub = type(f"Parametrized{cls.__name__}", (cls,), {})
        sub._ember_original_class = cls  # type: ignore[attr-defined]
        object.__setattr__(module, "__class__", sub)
        module.parametrizations = ModuleDict()
    module.parametrizations[tensor_name] = plist
    setattr(type(module), tensor_name, _property(tensor_name))
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` (or its ``tensor_name``) has parametrizations."""
    plists = module._modules.get("parametrizations")
    if plists is None:
        return False
    return tensor_name is None or tensor_name in plists._modules


def type_before_parametrizations(module: Module) -> type:
    """The module's class as it was before any parametrization."""
    return getattr(type(module), "_ember_original_class", type(module))


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Take ``tensor_name``'s parametrizations away: it becomes a parameter holding its current value
    (``leave_parametrized``) or its original one."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"remove_parametrizations: {type(module).__name__} has no parametrization on {tensor_name!r}")
    plist = module.parametrizations[tensor_name]
    if leave_parametrized:
        with no_grad():
            value = getattr(module, tensor_name)
        new = Param(value.detach(), requires_grad=value.requires_grad or plist.original.requires_grad
                    if plist.is_tensor else True)  # fmt: skip
    else:
        if not plist.is_tensor:
            raise ValueError("remove_parametrizations: leave_parametrized=False needs a single original tensor")
        new = plist.original
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    module.register_parameter(tensor_name, new)
    if not module.parametrizations._modules:
        del module._modules["parametrizations"]
        object.__setattr__(module, "__class__", type_before_parametrizations(module))
    return module
