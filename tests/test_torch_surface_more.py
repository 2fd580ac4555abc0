"""PyTorch names programs still stopped on, each run as the same code under both libraries: ``cond`` and
``while_loop``, ``nn.grad``'s convolution gradients, ``Tensor.apply_``/``map_``/
``as_subclass``/``nonzero_static``, ``set_default_tensor_type`` and ``ember.types``."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

LIBS = pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])


def _np(t: Any) -> np.ndarray:
    return np.asarray(t.detach().cpu().tolist())


def _error(fn: Any) -> tuple[str, str]:
    try:
        fn()
    except Exception as e:
        return type(e).__name__, str(e)
    return "none", ""


# -- cond / while_loop -------------------------------------------------------------------------------------------


def _control_flow(lib: Any) -> list[Any]:
    x = lib.tensor([[1.0, -2.0], [3.0, 0.5]], dtype=lib.float64, requires_grad=True)
    out: list[Any] = []
    for pred in (True, False, 0, 1.5, lib.tensor(True), lib.tensor([0.0]), lib.tensor([[2]])):
        y = lib.cond(pred, lambda a: (a * 2).sin(), lambda a: a**3, (x,))
        (g,) = lib.autograd.grad(y.sum(), x)
        out.append((_np(y).round(12).tolist(), _np(g).round(12).tolist()))
    out.append(lib.cond(False, lambda a, b: a + b, lambda a, b: a - b, [x, 2 * x]).tolist())
    i, acc = lib.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, a * x), (lib.tensor(0), lib.ones_like(x)))
    out.append((int(i), _np(acc).round(12).tolist()))
    never = lib.while_loop(lambda i: i < 0, lambda i: (i + 1,), (lib.tensor(5),))
    out.append((type(never).__name__, int(never[0])))
    single = lib.while_loop(lambda i: i < 3, lambda i: i + 1, (lib.tensor(0),))
    out.append((type(single).__name__, int(single)))
    return out


def test_cond_and_while_loop_as_pytorch() -> None:
    assert repr(_control_flow(ember)) == repr(_control_flow(torch))


def test_while_loop_gradient_is_the_unrolled_loops() -> None:
    """The gradient through the iterations that ran, equal to PyTorch's for the loop written out. (torch 2.13's own
    ``while_loop`` gives x**3 here, not 4 * x**3: its backward drops all but the last use of the captured ``x``.)"""
    v = [[1.0, -2.0], [3.0, 0.5]]
    x = ember.tensor(v, dtype=ember.float64, requires_grad=True)
    _, acc = ember.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, a * x), (ember.tensor(0), ember.ones_like(x)))
    (g,) = ember.autograd.grad(acc.sum(), x)
    tx = torch.tensor(v, dtype=torch.float64, requires_grad=True)
    ta = torch.ones_like(tx)
    for _ in range(4):
        ta = ta * tx
    (tg,) = torch.autograd.grad(ta.sum(), tx)
    np.testing.assert_array_equal(_np(g), _np(tg))


@LIBS
def test_cond_refuses_a_predicate_of_several_elements(lib: Any) -> None:
    with pytest.raises(RuntimeError, match="single-element tensor"):
        lib.cond(lib.tensor([True, False]), lambda a: a, lambda a: a, (lib.ones(1),))


@LIBS
@pytest.mark.parametrize(
    ("body", "words"),
    [
        (lambda i, a: (i + 1,), "same number of outputs"),
        (lambda i, a: (i + 1, a.double()), "dtype"),
        (lambda i, a: (i + 1, a.repeat(2)), "shape"),
    ],
    ids=["count", "dtype", "shape"],
)
def test_while_loop_refuses_a_body_that_changes_the_carried_values(lib: Any, body: Any, words: str) -> None:
    with pytest.raises(RuntimeError, match=words):
        lib.while_loop(lambda i, a: i < 3, body, (lib.tensor(0), lib.ones(1)))


# -- nn.grad -----------------------------------------------------------------------------------------------------

CONVS = [
    ("conv1d", (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, dilation=1, groups=2)),
    ("conv2d", (2, 4, 7, 6), (6, 2, 3, 2), dict(stride=2, padding=1, dilation=1, groups=2)),
    ("conv2d", (1, 3, 8, 8), (5, 3, 3, 3), dict(stride=1, padding=2, dilation=2, groups=1)),
    ("conv3d", (1, 2, 5, 4, 4), (3, 2, 2, 2, 2), dict(stride=1, padding=0, dilation=1, groups=1)),
]


@pytest.mark.parametrize(("name", "xs", "ws", "kw"), CONVS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CONVS)])
def test_nn_grad_convolution_gradients_equal_pytorch(name: str, xs: tuple, ws: tuple, kw: dict, monkeypatch) -> None:
    if ember.get_default_device().type == "cuda":  # bits equal between two calls: cuDNN's deterministic algorithms
        monkeypatch.setattr(ember.backends.cudnn, "deterministic", True)  # (PyTorch's rule; also sets torch's flag)
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    results, g = [], None
    for lib in (ember, torch):
        X, W = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        y = getattr(lib.nn.functional, name)(X, W, None, **kw)
        g = rng.standard_normal(tuple(y.shape)) if g is None else g
        go = lib.tensor(g)
        gi = getattr(lib.nn.grad, f"{name}_input")(X.shape, W, go, **kw)
        gw = getattr(lib.nn.grad, f"{name}_weight")(X, W.shape, go, **kw)
        ai, aw = lib.autograd.grad(y, (X, W), go)
        assert np.array_equal(_np(gi), _np(ai)) and np.array_equal(_np(gw), _np(aw))
        (ggw,) = lib.autograd.grad(gi.sum(), W)  # differentiable in its tensor arguments
        results.append((_np(gi), _np(gw), _np(ggw)))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_nn_grad_names_a_grad_output_of_the_wrong_shape() -> None:
    with pytest.raises(RuntimeError, match=r"conv2d_input: grad_output has shape \(1, 2, 3, 3\)"):
        ember.nn.grad.conv2d_input((1, 3, 6, 6), ember.ones(2, 3, 3, 3), ember.ones(1, 2, 3, 3))


# -- Tensor.apply_ / map_ / as_subclass / nonzero_static ----------------------------------------------------------


def _host_maps(lib: Any) -> list[Any]:
    """On CPU tensors (apply_/map_ run a Python callable per element: CPU only) while the default device may be
    another (make test-cuda: cuda)."""
    out: list[Any] = []
    cpu = {"device": "cpu"}
    z = lib.arange(6, **cpu).reshape(2, 3).t()
    out.append(z.apply_(lambda v: v * 10 + 1).tolist())
    out.append(lib.tensor([1, 2], **cpu).apply_(lambda v: 2.7).tolist())
    a = lib.tensor([[1.0, 2.0], [3.0, 4.0]], **cpu)
    out.append(a.map_(lib.tensor([10.0, 20.0], **cpu), lambda p, q: p * q).tolist())
    out.append(lib.tensor([[0, 3], [5, 0]], **cpu).nonzero_static(size=3).tolist())
    out.append(lib.tensor([0, 3, 0, 5], **cpu).nonzero_static(size=1, fill_value=-7).tolist())
    out.append(_error(lambda: lib.ones(2, requires_grad=True, **cpu).apply_(abs))[1])
    wrong = lib.ones(2, dtype=lib.int64, **cpu)
    out.append(_error(lambda: lib.ones(2, **cpu).map_(wrong, max))[1].replace(lib.__name__, "LIB"))
    out.append(_error(lambda: lib.ones(2, **cpu).map_([1, 2], max)))
    try:
        lib.ones(1, 2, **cpu).map_(lib.ones(2, 1, **cpu), max)
    except RuntimeError:  # other is broadcast to self's shape, never self to other's
        out.append("refused")
    m = lib.ones(2, device="meta")  # a meta tensor: nothing to call the callable on, returned as is
    out.append((m.apply_(abs) is m, m.map_(lib.ones(2, device="meta"), max) is m))
    return out


def test_apply_map_and_nonzero_static_as_pytorch() -> None:
    assert _host_maps(ember) == _host_maps(torch)


def _on_cuda(lib: Any) -> list[Any]:
    x = lib.ones(2, device="cuda")
    return [
        _error(lambda: x.apply_(abs)),
        _error(lambda: x.map_(lib.ones(2, device="cuda"), max)),
        _error(lambda: x.map_(lib.ones(2, device="cpu"), max)),  # another device type: another type name
    ]


@pytest.mark.skipif(not (ember.cuda.is_available() and torch.cuda.is_available()), reason="needs CUDA")
def test_apply_and_map_refuse_a_cuda_tensor_as_pytorch() -> None:
    got, want = _on_cuda(ember), _on_cuda(torch)
    assert [g[0] for g in got] == [w[0] for w in want] == ["TypeError"] * 3
    for (_, g), (_, w) in zip(got, want, strict=True):
        assert g.startswith(w.replace("torch.", "ember.")), (g, w)


def test_as_subclass_is_an_alias_attached_to_the_graph() -> None:
    answers = []
    for lib in (ember, torch):

        class Marked(lib.Tensor):  # type: ignore[name-defined, misc]
            pass

        w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        s = (w * w).as_subclass(Marked)
        (s * 3).sum().backward()
        base = lib.zeros(3)
        alias = base.as_subclass(Marked)
        alias.add_(1)  # the alias shares the data
        answers.append((type(s) is Marked, s.requires_grad, w.grad.tolist(), base.tolist(), isinstance(s, lib.Tensor)))
        answers.append(_error(lambda lib=lib: lib.ones(1).as_subclass(int))[0])
    assert answers[:2] == answers[2:]


# -- set_default_tensor_type, ember.types --------------------------------------------------------------------------


def _default_type(lib: Any) -> list[Any]:
    out: list[Any] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            lib.set_default_tensor_type(lib.DoubleTensor)
            out.append((str(lib.get_default_dtype()).split(".")[1], str(lib.zeros(1).dtype).split(".")[1]))
            lib.set_default_tensor_type(f"{lib.__name__}.HalfTensor")
            out.append(str(lib.ones(1).dtype).split(".")[1])
            out.append(_error(lambda: lib.set_default_tensor_type(lib.LongTensor)))
            out.append(_error(lambda: lib.set_default_tensor_type("torch.cuda.FloatTensor"))[0])
        finally:
            lib.set_default_dtype(lib.float32)
    out.append(any("set_default_tensor_type() is deprecated" in str(w.message) for w in caught))
    return out


def test_set_default_tensor_type_as_pytorch() -> None:
    if torch.cuda.is_available() or ember.cuda.is_available():
        pytest.skip("the CUDA type is refused only without CUDA")
    assert _default_type(ember) == _default_type(torch)


def test_types_module_has_the_aliases_pytorch_code_imports() -> None:
    import torch.types as tt

    import ember.types as et

    for name in ("Number", "Device", "FileLike", "_size", "_TensorOrTensors", "IntLikeType", "_int", "_float",
                 "_bool", "_dtype", "_device", "_layout", "Storage"):  # fmt: skip
        assert hasattr(tt, name) and hasattr(et, name), name
    assert et.Number == tt.Number and et._dtype is ember.dtype and et._device is ember.device
    assert isinstance(ember.float32, et._dtype) and ember.Size([2]) == (2,)


# -- quasirandom.SobolEngine, get_device_module, Tensor.module_load, utils.swap_tensors ---------------------------


def _sobol(lib: Any) -> list[Any]:
    pytest.importorskip("scipy")
    S = lib.quasirandom.SobolEngine
    e = S(5)
    out: list[Any] = [e.draw(3).tolist(), str(e.draw(2).dtype).split(".")[1], e.num_generated, repr(e)]
    out.append(e.draw(4, dtype=lib.float64).tolist())
    e.reset()
    out.append((e.num_generated, e.draw_base2(2).tolist()))
    f = S(3).fast_forward(5)
    out.append((f.num_generated, f.draw(2, dtype=lib.float64).tolist()))
    buf = lib.empty(1, 3, dtype=lib.float64)
    out.append((S(3).draw(4, out=buf) is buf, tuple(buf.shape), buf.tolist()))
    out.append(tuple(S(1111).draw(2).shape))
    out.append(repr(S(2, scramble=True, seed=3)).replace(lib.__name__, "LIB"))
    out.append(_error(lambda: S(0)))
    out.append(_error(lambda: S(21202)))
    g = S(2)
    g.draw(3)
    out.append(_error(lambda: g.draw_base2(2)))
    return out


def test_sobol_engine_draws_pytorch_points() -> None:
    assert _sobol(ember) == _sobol(torch)


def test_scrambled_sobol_is_reproducible_and_balanced() -> None:
    pytest.importorskip("scipy")
    ember.manual_seed(0)
    e = ember.quasirandom.SobolEngine(3, scramble=True)
    a = e.draw(64, dtype=ember.float64)
    e.reset()
    assert np.array_equal(_np(e.draw(64, dtype=ember.float64)), _np(a))  # reset keeps the scrambling
    ember.manual_seed(0)
    assert np.array_equal(_np(ember.quasirandom.SobolEngine(3, scramble=True).draw(64, dtype=ember.float64)), _np(a))
    seeded = [_np(ember.quasirandom.SobolEngine(3, scramble=True, seed=7).draw(8)) for _ in range(2)]
    assert np.array_equal(*seeded) and not np.array_equal(seeded[0], _np(a[:8]).astype(np.float32))
    pts = _np(a)
    assert pts.min() >= 0 and pts.max() < 1
    for d in range(3):  # each of 64 equal bins of a coordinate holds exactly one point (a (0, m, 1)-net)
        assert sorted(np.floor(pts[:, d] * 64).astype(int).tolist()) == list(range(64))


@LIBS
def test_get_device_module(lib: Any) -> None:
    assert lib.get_device_module("cpu") is lib.cpu and lib.get_device_module(lib.device("cpu")) is lib.cpu
    assert lib.get_device_module("cuda:1") is lib.cuda
    with pytest.raises(RuntimeError, match="does not have a corresponding module"):
        lib.get_device_module("meta")


def test_module_load_and_swap_tensors_as_pytorch() -> None:
    answers = []
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.ones(2))
        with lib.no_grad():
            loaded = p.module_load(lib.full((2,), 3.0))
        _error(lambda p=p, lib=lib: p.module_load(lib.full((2,), 4.0)))[0]
        assigned = p.module_load(lib.full((2,), 5.0, requires_grad=True), assign=True)
        a, b = lib.ones(2), lib.zeros(3, requires_grad=True)
        a.tag, b.note = "a", "b"  # a program's own attributes go with the contents
        lib.utils.swap_tensors(a, b)
        attrs = (getattr(a, "note", None), getattr(a, "tag", None), getattr(b, "tag", None))
        x = lib.ones(2, requires_grad=True)
        y, z = x * 2, lib.ones(2)
        lib.utils.swap_tensors(y, z)
        (z * 3).sum().backward()
        answers.append(
            (
                attrs,
                loaded.tolist(),
                p.tolist(),
                loaded.requires_grad,
                assigned.tolist(),
                assigned.requires_grad,
                a.tolist(),
                a.requires_grad,
                b.tolist(),
                y.tolist(),
                y.grad_fn is None,
                x.grad.tolist(),
                _error(lambda lib=lib: lib.utils.swap_tensors(lib.ones(1), 3))[0],
            )
        )
    assert answers[0][:-1] == answers[1][:-1]
    assert answers[0][-1] == "TypeError"  # PyTorch: AttributeError from its internals
