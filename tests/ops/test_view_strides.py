"""``Tensor.view`` follows PyTorch's stride rule on non-contiguous inputs: every shape PyTorch views is viewed
(same values, same strides, memory shared: writes show through), every shape it refuses is refused."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _inputs(lib):
    """Non-contiguous tensors made the same way in both libraries: name -> tensor."""
    base = lib.tensor(np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5))
    flat = lib.tensor(np.arange(24, dtype=np.float32))
    qkv = lib.tensor(np.arange(2 * 3 * 12, dtype=np.float32).reshape(2, 3, 12))
    return {
        "transpose": base.transpose(1, 2),
        "permute": base.permute(0, 2, 3, 1),
        "last_two_swapped": base.transpose(2, 3),
        "step_slice": base[:, :, ::2],
        "inner_slice": base[:, 1:3],
        "split_first": qkv.split(4, dim=2)[0],
        "split_middle": qkv.split(4, dim=2)[1],
        "narrow": base.narrow(3, 1, 3),
        "expand": flat.view(1, 24).expand(3, 24),
        "expand_inner": flat.view(4, 1, 6).expand(4, 2, 6),
        "unsqueezed_transpose": flat.view(4, 6).t().unsqueeze(1),
        "column": flat.view(4, 6)[:, 2:3],
    }


def _shapes(numel: int) -> list[tuple[int, ...]]:
    """Every shape of ``numel`` elements with up to 4 dims (sizes >= 1), and a few with -1."""
    divisors = [d for d in range(1, numel + 1) if numel % d == 0]
    out = set()
    for n in range(1, 5):
        for dims in itertools.product(divisors, repeat=n - 1):
            rest = numel
            for d in dims:
                rest = rest // d if rest % d == 0 else 0
            if rest:
                out.add((*dims, rest))
    out |= {(-1,), (-1, 1), (1, -1, 2) if numel % 2 == 0 else (1, -1)}
    return sorted(out)


NAMES = list(_inputs(ember))


@pytest.mark.parametrize("name", NAMES)
def test_view_accepts_and_refuses_what_torch_does(name):
    t_in, e_in = _inputs(torch)[name], _inputs(ember)[name]
    accepted = refused = 0
    for shape in _shapes(t_in.numel()):
        try:
            want = t_in.view(*shape)
        except RuntimeError:
            with pytest.raises(RuntimeError, match="view size is not compatible"):
                e_in.view(*shape)
            refused += 1
            continue
        got = e_in.view(*shape)
        assert got.shape == tuple(want.shape), shape
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got.stride() == want.stride(), (name, shape)
        accepted += 1
    assert accepted and (refused or name in ("expand", "column", "split_first", "split_middle", "step_slice"))


def test_a_view_of_a_split_writes_through_and_carries_gradients():
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(np.random.default_rng(0).standard_normal((2, 3, 12)), requires_grad=True)
        y = x * 1.0
        qh = y[..., :4].view(2, 3, 2, 2)
        qh.mul_(2.0)  # a write into the view is a write into y
        assert np.allclose(y[..., :4].detach().numpy(), 2 * x[..., :4].detach().numpy())
        _, k, _ = y.split(4, dim=2)
        kh = k.view(2, 3, 2, 2)  # a view of one of split's outputs
        ((qh * 3).sum() + (kh * kh).sum() + (y * y).sum()).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1])


def test_refusal_is_catchable_as_pytorch_code_catches_it():
    x = ember.randn(3, 4).t()
    with pytest.raises(RuntimeError, match=r"Use \.reshape\(\.\.\.\) instead"):
        x.view(12)
    assert x.reshape(12).tolist() == x.contiguous().view(12).tolist()


def _memory_cases(lib):
    """(base, name -> tensor): views, an in-place result and copies of one base, made the same way."""
    base = lib.tensor(np.arange(60, dtype=np.float64).reshape(3, 4, 5))
    return base, {
        "base": base,
        "slice": base[1:],
        "select": base[2, 1],
        "narrow": base.narrow(2, 2, 3),
        "transpose": base.transpose(0, 2),
        "view": base.view(12, 5),
        "split_last": base.split(2, dim=2)[2],
        "in_place": base.add_(1),
        "clone": base.clone(),
        "contiguous_copy": base.transpose(0, 2).contiguous(),
    }


def _memory_facts(base, t):
    """Where ``t``'s first element lies, in elements from ``base``'s, or None outside ``base``; and its offset."""
    delta = t.data_ptr() - base.data_ptr()
    inside = 0 <= delta < base.numel() * base.element_size()
    return (delta // t.element_size() if inside else None), t.storage_offset()


def test_data_ptr_and_storage_offset_match_torch():
    (t_base, t_cases), (e_base, e_cases) = _memory_cases(torch), _memory_cases(ember)
    for name in t_cases:
        assert _memory_facts(e_base, e_cases[name]) == _memory_facts(t_base, t_cases[name]), name
    assert isinstance(e_base.data_ptr(), int) and e_base.data_ptr() != 0
    assert e_cases["split_last"].storage_offset() == 4


@pytest.mark.parametrize("lib", ["torch", "ember"])
def test_view_of_the_same_shape_is_a_new_tensor(lib: str) -> None:
    """``x.view(x.shape)``/``x.view_as(x)`` make a new view, as in PyTorch (not ``x`` itself): a custom Function
    returning ``x.view_as(x)`` (gradient reversal) gets an output distinct from its input; writes go through."""
    t = pytest.importorskip("torch") if lib == "torch" else ember
    for a in (t.arange(6.0).reshape(2, 3), t.arange(6.0).reshape(3, 2).t()):
        for b in (a.view(a.shape), a.view_as(a), a.view(*a.shape)):
            assert b is not a and tuple(b.shape) == tuple(a.shape) and b.stride() == a.stride()
            b[0, 0] = 10.0
            assert float(a[0, 0]) == 10.0
    x = t.ones(3, requires_grad=True)

    class Reverse(t.autograd.Function):
        @staticmethod
        def forward(ctx, v):  # type: ignore[no-untyped-def]
            return v.view_as(v)

        @staticmethod
        def backward(ctx, g):  # type: ignore[no-untyped-def]
            return -g

    y = Reverse.apply(x)
    assert y is not x and y.grad_fn is not None
    (y * 2.0).sum().backward()
    assert [float(v) for v in x.grad] == [-2.0, -2.0, -2.0]
