"""Forward hooks with PyTorch's options (``prepend``, ``with_kwargs``, ``always_call``) and the global forward hooks
of ``torch.nn.modules.module``, run as the same code under both libraries."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import ember

torch = pytest.importorskip("torch")


def _scaled(lib: Any) -> Any:
    class Scaled(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)

        def forward(self, x: Any, scale: float = 1.0) -> Any:
            return self.lin(x) * scale

    lib.manual_seed(0)
    m = Scaled()
    with lib.no_grad():
        m.lin.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        m.lin.bias.zero_()
    return m


def _hook_story(lib: Any) -> list[Any]:
    log: list[Any] = []
    m = _scaled(lib)
    x = lib.tensor([1.0, 1.0])
    m.register_forward_pre_hook(lambda mod, a: log.append("pre-a"))
    m.register_forward_pre_hook(lambda mod, a: log.append("pre-b"), prepend=True)

    def double_scale(mod: Any, args: Any, kwargs: Any) -> Any:
        log.append(("pre-kw", sorted(kwargs)))
        return args, {**kwargs, "scale": kwargs.get("scale", 1.0) * 2}

    h_kw = m.register_forward_pre_hook(double_scale, with_kwargs=True)
    m.register_forward_hook(lambda mod, a, out: log.append(("fwd", out.tolist())))
    m.register_forward_hook(lambda mod, a, kw, out: log.append(("fwd-kw", kw)) or out + 1, with_kwargs=True)
    m.register_forward_hook(lambda mod, a, out: log.append("fwd-first"), prepend=True)
    log.append(m(x, scale=3.0).tolist())
    h_kw.remove()
    log.append(m(x).tolist())
    g_pre = lib.nn.modules.module.register_module_forward_pre_hook(
        lambda mod, a: log.append(("g-pre", type(mod).__name__))
    )
    g_fwd = lib.nn.modules.module.register_module_forward_hook(
        lambda mod, a, kw, out: log.append(("g-fwd", type(mod).__name__, kw)), with_kwargs=True
    )
    seq = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh())
    seq(x)
    g_pre.remove()
    g_fwd.remove()
    seq(x)
    log.append(len(log))
    return log


def test_forward_hook_options_and_global_hooks_as_pytorch() -> None:
    assert _hook_story(ember) == _hook_story(torch)


def _always_call(lib: Any) -> list[Any]:
    log: list[Any] = []

    class Boom(lib.nn.Module):
        def forward(self, x: Any) -> Any:
            raise ValueError("boom")

    b = Boom()
    b.register_forward_hook(lambda mod, a, out: log.append(("plain", out)))
    b.register_forward_hook(lambda mod, a, out: log.append(("always", out)), always_call=True)
    b.register_forward_hook(
        lambda mod, a, kw, out: log.append(("always-kw", kw, out)), with_kwargs=True, always_call=True
    )

    def broken(mod: Any, a: Any, out: Any) -> None:
        raise KeyError("hook")

    b.register_forward_hook(broken, always_call=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="boom"):
            b(1)
    log.append([c.category.__name__ for c in caught])
    return log


def test_always_call_hooks_run_when_forward_raises_as_pytorch() -> None:
    assert _always_call(ember) == _always_call(torch)


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_a_kwargs_pre_hook_must_return_args_and_kwargs(lib: Any) -> None:
    m = lib.nn.Identity()
    m.register_forward_pre_hook(lambda mod, a, kw: a, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args, new_kwargs\)"):
        m(lib.ones(1))


def test_hook_options_with_backward_hooks() -> None:
    answers = []
    for lib in (ember, torch):
        m = _scaled(lib)
        seen: list[Any] = []
        m.register_full_backward_hook(lambda mod, gi, go, seen=seen: seen.append([g.tolist() for g in go]))
        m.register_forward_hook(lambda mod, a, kw, out: out * kw["scale"], with_kwargs=True)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        m(x, scale=2.0).sum().backward()
        answers.append((seen, x.grad.tolist()))
    assert answers[0] == answers[1]
