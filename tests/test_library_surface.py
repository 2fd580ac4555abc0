"""The pieces of PyTorch's surface that PEFT, accelerate and torchmetrics touch (found by running them with ``torch``
aliased to Ember), each run under PyTorch and Ember alike."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


@pytest.mark.parametrize("shape", [(3, 4), (3, 4, 5), (0, 4), (2, 3, 1, 2)])
def test_init_fan_helpers(shape):
    def fans(lib):
        t = lib.empty(*shape)
        init = lib.nn.init
        return (init._calculate_fan_in_and_fan_out(t), init._calculate_correct_fan(t, "fan_in"),
                init._calculate_correct_fan(t, "FAN_OUT"))  # fmt: skip

    assert fans(ember) == fans(torch)


@LIBS
def test_init_fan_helpers_refuse_like_pytorch(lib):
    with pytest.raises(ValueError, match=r"fewer than 2|at least 2"):
        lib.nn.init._calculate_fan_in_and_fan_out(lib.empty(3))
    with pytest.raises(ValueError, match="Mode fan_x not supported"):
        lib.nn.init._calculate_correct_fan(lib.empty(3, 4), "fan_x")
    with pytest.raises(ValueError, match="Mode fan_x not supported"):
        lib.nn.init.kaiming_uniform_(lib.empty(3, 4), mode="fan_x")


def test_kaiming_mode_in_either_case():
    for lib in (torch, ember):
        lib.manual_seed(0)
    w = {lib.__name__: lib.nn.init.kaiming_uniform_(lib.empty(200, 50), mode="FAN_OUT") for lib in (torch, ember)}
    bound = (6 / 200) ** 0.5  # gain sqrt(2) (leaky_relu, a=0) * sqrt(3) / sqrt(fan_out)
    for t in w.values():
        assert bound * 0.95 < float(t.abs().max()) <= bound


@LIBS
def test_moduledict_update_pop_clear(lib):
    nn = lib.nn
    d = nn.ModuleDict({"a": nn.ReLU()})
    d.update(nn.ModuleDict({"b": nn.Tanh(), "a": nn.Sigmoid()}))  # PEFT: lora_dropout.update(ModuleDict(...))
    assert list(d.keys()) == ["a", "b"] and isinstance(d["a"], nn.Sigmoid)
    d.update([("c", nn.ReLU())])
    d.update((k, m) for k, m in [["e", nn.ELU()]])
    assert list(d) == ["a", "b", "c", "e"]
    assert isinstance(d.pop("b"), nn.Tanh) and list(d) == ["a", "c", "e"]
    with pytest.raises(KeyError):
        d.pop("b")
    assert len(list(d.parameters())) == 0 and [n for n, _ in d.named_modules()] == ["", "a", "c", "e"]
    d.clear()
    assert len(d) == 0 and [n for n, _ in d.named_modules()] == [""]


@LIBS
def test_moduledict_update_refuses_like_pytorch(lib):
    d = lib.nn.ModuleDict()
    with pytest.raises(TypeError, match="iterable of key/value pairs"):
        d.update(3)
    with pytest.raises(TypeError, match="element #0 should be Iterable"):
        d.update([1])
    with pytest.raises(ValueError, match="element #0 has length 3; 2 is required"):
        d.update([("a", lib.nn.ReLU(), 1)])


@pytest.mark.parametrize("spec", ["mps", "xpu:1", "xla", "hpu", "privateuseone:0"])
def test_other_device_types_make_device_objects(spec):
    t, e = torch.device(spec), ember.device(spec)
    assert (e.type, e.index, repr(e), str(e)) == (t.type, t.index, repr(t), str(t))
    assert e != ember.device("cpu") and e == ember.device(spec) and hash(e) == hash(ember.device(spec))
    with pytest.raises(ValueError, match="not available"):  # no backend serves them
        ember.zeros(2, device=spec)
    with pytest.raises(RuntimeError, match="not available"):
        ember.ones(2).to(spec)
    with pytest.raises(ValueError, match="not available"):
        ember.set_default_device(spec)
    assert ember.get_default_device() == "cpu"


@LIBS
def test_unknown_device_types_are_refused(lib):
    for spec in ("tpu", "bogus:0"):
        with pytest.raises((RuntimeError, ValueError), match="device"):
            lib.device(spec)
    with pytest.raises((RuntimeError, ValueError), match="mps:x"):
        lib.device("mps:x")
