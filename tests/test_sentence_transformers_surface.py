"""The pieces of PyTorch's surface that sentence-transformers (and transformers' ``from_pretrained`` under it)
touch, found by running it with ``torch`` aliased to Ember, each run under PyTorch and Ember alike."""

from __future__ import annotations

import importlib

import pytest

import ember

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


@LIBS
def test_device_states_of_cpu_tensors(lib):
    ckpt = importlib.import_module(lib.__name__ + ".utils.checkpoint")
    x = lib.ones(2)
    assert ckpt.get_device_states() == ([], [])
    assert ckpt.get_device_states(x, 3, [x, {"k": (x, None)}], "s") == ([], [])
    ckpt.set_device_states([], [])  # nothing to restore
    ckpt.set_device_states([], [], device_type="meta")


@LIBS
def test_extra_state_key_suffix(lib):
    mod = importlib.import_module(lib.__name__ + ".nn.modules.module")
    assert mod._EXTRA_STATE_KEY_SUFFIX == "_extra_state"

    class WithExtra(lib.nn.Module):
        def get_extra_state(self):
            return {"step": 3}

        def set_extra_state(self, state):
            self.step = state["step"]

    assert list(WithExtra().state_dict()) == [mod._EXTRA_STATE_KEY_SUFFIX]


@LIBS
def test_non_persistent_buffers_set(lib):
    m = lib.nn.BatchNorm1d(2)
    m.register_buffer("scratch", lib.zeros(2), persistent=False)
    m.register_buffer("kept", lib.zeros(2))
    assert m._non_persistent_buffers_set == {"scratch"}
    assert "scratch" not in m.state_dict() and "kept" in m.state_dict()
    m._non_persistent_buffers_set.add("kept")  # edited in place, as libraries do: it counts
    assert "kept" not in m.state_dict()
    m._non_persistent_buffers_set.discard("scratch")
    assert "scratch" in m.state_dict()
    assert lib.nn.Sequential(m)._non_persistent_buffers_set == set()  # the module's own buffers only


def test_print_options_context_matches_pytorch():
    def run(lib):
        ts = lib._tensor_str
        seen = [ts.get_printoptions()]
        with ts.printoptions(precision=2, sci_mode=False, linewidth=100):
            seen.append(ts.get_printoptions())
        seen.append(ts.get_printoptions())
        with pytest.raises(KeyError), ts.printoptions(threshold=5, edgeitems=1):
            seen.append(ts.get_printoptions())
            raise KeyError
        seen.append(ts.get_printoptions())
        lib.set_printoptions(profile="short")
        seen.append(ts.get_printoptions())
        lib.set_printoptions(profile="default")
        seen.append(ts.get_printoptions())
        return seen

    assert run(ember) == run(torch)
    with ember._tensor_str.printoptions(precision=2):  # and the block prints with them (Ember's own format)
        short = str(ember.tensor([1.23456]))
    assert "1.2" in short and "1.23" not in short
    assert "1.235" in str(ember.tensor([1.23456]))
