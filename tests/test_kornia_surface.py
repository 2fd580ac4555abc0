"""The pieces of PyTorch's surface that kornia imports or asks (found by running it with ``torch`` aliased to
Ember), each run under PyTorch and Ember alike where both have a meaning."""

from __future__ import annotations

import importlib

import pytest

import ember

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


@LIBS
def test_module_refers_to_itself(lib):
    assert lib.torch is lib and lib.torch.Tensor is lib.Tensor


@LIBS
def test_no_fake_tensor_and_no_proxy_mode_outside_tracing(lib):
    fake = importlib.import_module(lib.__name__ + "._subclasses.fake_tensor")
    proxy = importlib.import_module(lib.__name__ + ".fx.experimental.proxy_tensor")
    assert fake.is_fake(lib.ones(2)) is False and fake.is_fake(lib.empty(2, device="meta")) is False
    assert fake.is_fake(3) is False
    assert proxy.get_proxy_mode() is None


@LIBS
def test_symbolic_scalar_types(lib):
    for kind in (lib.SymInt, lib.SymFloat, lib.SymBool):
        assert isinstance(kind, type)
        assert not isinstance(3, kind) and not isinstance(3.0, kind) and not isinstance(True, kind)
        assert not isinstance(lib.ones(2).shape[0], kind)


def test_ember_has_no_symbolic_values():
    with pytest.raises(RuntimeError, match="no symbolic sizes"):
        ember.SymInt(3)


def test_mkldnn_flags():
    assert ember.backends.mkldnn.is_available() is False  # Ember calls no oneDNN kernels (PyTorch's CPU build: True)
    assert ember.backends.mkldnn.enabled is True and isinstance(torch.backends.mkldnn.is_available(), bool)


@LIBS
def test_functorch_transforms_active_inside_a_transform(lib):
    seen = []

    def f(x):
        seen.append(lib._C._are_functorch_transforms_active())
        return (x * x).sum()

    x = lib.ones(3)
    assert lib._C._are_functorch_transforms_active() is False
    runs = [lambda: lib.func.grad(f)(x), lambda: lib.func.vmap(f)(lib.ones(2, 3)), lambda: lib.func.jacrev(f)(x),
            lambda: lib.func.vjp(f, x), lambda: lib.func.jvp(f, (x,), (x,)),
            lambda: lib.func.grad(lib.func.grad(lambda y: f(y)))(lib.ones(()))]  # fmt: skip
    for run in runs:
        seen.clear()
        run()
        assert seen and all(seen)  # (vmap runs f once per entry on Ember, once batched on PyTorch)
    seen.clear()
    f(x)
    assert seen == [False] and lib._C._are_functorch_transforms_active() is False


@LIBS
def test_not_in_onnx_export_outside_one(lib):
    assert lib.onnx.is_in_onnx_export() is False


def test_in_onnx_export_while_exporting(tmp_path):
    pytest.importorskip("onnx")
    seen = []

    class Net(ember.nn.Module):
        def forward(self, x):
            seen.append(ember.onnx.is_in_onnx_export())
            return x * 2

    ember.onnx.export(Net(), ember.ones(2, 3), str(tmp_path / "net.onnx"))
    assert seen and all(seen) and ember.onnx.is_in_onnx_export() is False
