"""State-dict hooks and extra state beside PyTorch: the same code run under ``torch.nn`` and ``ember.nn`` logs the
same hook calls (order over submodules, arguments), builds the same state dicts, and fails the same way."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _net(lib):
    class Counter(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 3)
            self.steps = 0

        def get_extra_state(self):
            return {"steps": self.steps, "tag": "c"}

        def set_extra_state(self, state):
            self.steps = state["steps"]

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Counter()
            self.bn = lib.nn.BatchNorm1d(3)
            self.register_buffer("scale", lib.ones(1), persistent=False)
            self.head = lib.nn.Linear(3, 1)

    net = Net()
    with lib.no_grad():
        for i, p in enumerate(net.state_dict(keep_vars=True).values()):
            if hasattr(p, "copy_") and p.dtype == lib.float32:
                p.copy_(lib.tensor(np.cos(np.arange(p.numel()) + i).reshape(tuple(p.shape)), dtype=lib.float32))
    return net


def _plain(sd):
    """A state dict as comparable plain data (tensors as lists)."""
    return [(k, v.tolist() if hasattr(v, "tolist") else v) for k, v in sd.items()]


def _save_hooks(lib):
    net, log = _net(lib), []
    mods = {id(m): n or "root" for n, m in net.named_modules()}
    for m in net.modules():
        m.register_state_dict_pre_hook(lambda mod, prefix, keep: log.append(("pre", mods[id(mod)], prefix, keep)))

        def post(mod, sd, prefix, meta):
            log.append(("post", mods[id(mod)], prefix, sorted(sd), dict(meta)))

        m.register_state_dict_post_hook(post)
    net.a.steps = 7
    sd = net.state_dict(prefix="m.", keep_vars=True)
    log.append(sorted(sd._metadata.items()))
    out = [log, _plain(sd), type(sd["m.a.lin.weight"]).__name__]
    out.append(list(net.state_dict()))
    return out


def test_state_dict_hooks_order_arguments_and_extra_state_match_torch():
    t, e = _save_hooks(torch), _save_hooks(ember)
    assert t[0] == e[0]
    assert [k for k, _ in t[1]] == [k for k, _ in e[1]]
    for (_, a), (_, b) in zip(t[1], e[1], strict=True):
        np.testing.assert_allclose(
            np.asarray(a, dtype=object).astype(float) if not isinstance(a, dict) else 0,
            np.asarray(b, dtype=object).astype(float) if not isinstance(b, dict) else 0,
        )
        if isinstance(a, dict):
            assert a == b
    assert t[1][0] == ("m.a._extra_state", {"steps": 7, "tag": "c"})
    assert t[2] == "Parameter" and e[2] == "Param"
    assert t[3] == e[3]


def _returns(lib):
    net, res = _net(lib), []
    h = net._register_state_dict_hook(lambda mod, sd, prefix, meta: {"only": 1})
    res.append(net.state_dict())  # the old hook's return replaces the root's state dict
    h.remove()
    hc = net.a._register_state_dict_hook(lambda mod, sd, prefix, meta: {"child": 1})
    res.append(sorted(net.state_dict()))  # ... but not a child's
    hc.remove()

    def public(mod, sd, prefix, meta):
        sd[prefix + "added"] = 5
        return None

    h = net.head.register_state_dict_post_hook(public)
    res.append(net.state_dict()["head.added"])
    h.remove()
    res.append("head.added" in net.state_dict())
    net.register_state_dict_post_hook(lambda *a: {})
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        net.state_dict()

    def twice(*a):
        return None

    net.register_state_dict_post_hook(twice)
    with pytest.raises(RuntimeError, match="previously registered via register_state_dict_post_hook"):
        net._register_state_dict_hook(twice)
    dest = {}
    with pytest.warns(FutureWarning, match="Positional args"):
        got = lib.nn.Linear(1, 1).state_dict(dest, "p.")
    res.append((got is dest, sorted(dest)))
    return res


def test_hook_returns_and_refusals_match_torch():
    assert _returns(torch) == _returns(ember)


def _load_hooks(lib):
    src, dst, log = _net(lib), _net(lib), []
    src.a.steps = 11
    names = {id(m): n or "root" for n, m in dst.named_modules()}
    sd = src.state_dict()

    def pre(mod, sd, prefix, meta, strict, missing, unexpected, errors):
        log.append(("pre", names[id(mod)], prefix, sorted(sd), dict(meta), strict, list(missing), list(unexpected)))

    def post(mod, keys):
        log.append(("post", names[id(mod)], list(keys.missing_keys), list(keys.unexpected_keys)))

    for m in dst.modules():
        m.register_load_state_dict_pre_hook(pre)
        m.register_load_state_dict_post_hook(post)
    res = [tuple(dst.load_state_dict(sd)), dst.a.steps, log[:]]
    res.append(_plain(dst.state_dict()) == _plain(sd))
    # the private form: without the module unless with_module
    seen = []
    dst.head._register_load_state_dict_pre_hook(lambda *a: seen.append(len(a)))
    dst.head._register_load_state_dict_pre_hook(lambda *a: seen.append(len(a)), with_module=True)
    log.clear()
    del sd["bn.bias"]
    sd["extra.key"] = sd["head.bias"]
    res.append(tuple(dst.load_state_dict(sd, strict=False)))
    res.append((log, seen))
    with pytest.raises(RuntimeError) as err:
        dst.load_state_dict(sd)
    res.append(str(err.value))
    return res


def test_load_hooks_order_arguments_and_keys_match_torch():
    t, e = _load_hooks(torch), _load_hooks(ember)
    assert t == e
    assert t[1] == 11 and t[0] == ([], [])


def _mutating(lib):
    net, res = _net(lib), []
    sd = net.state_dict()
    sd["junk"] = sd["head.bias"]
    del sd["bn.weight"]

    def forgive(mod, keys):
        keys.missing_keys.clear()
        keys.unexpected_keys.clear()

    h = net.register_load_state_dict_post_hook(forgive)
    res.append(tuple(net.load_state_dict(sd)))  # strict, yet no error: the post hook cleared the lists
    h.remove()

    def blame(mod, sd, prefix, meta, strict, missing, unexpected, errors):
        missing.append("made.up")
        errors.append("hook says no")

    h = net.head.register_load_state_dict_pre_hook(blame)
    with pytest.raises(RuntimeError) as err:
        net.load_state_dict(net.state_dict())
    res.append(str(err.value))
    h.remove()

    def rename(mod, sd, prefix, meta, strict, missing, unexpected, errors):
        if prefix + "old_weight" in sd:
            sd[prefix + "weight"] = sd.pop(prefix + "old_weight")

    net.head.register_load_state_dict_pre_hook(rename)
    sd = net.state_dict()
    w = sd.pop("head.weight")
    sd["head.old_weight"] = w * 2
    res.append(tuple(net.load_state_dict(sd)))
    res.append(net.head.weight.tolist())
    h = net.register_load_state_dict_post_hook(lambda mod, keys: keys)
    words = "not expected" if lib is not torch else "not ?expected"  # (PyTorch 2.11's words: "notexpected")
    with pytest.raises(AssertionError, match=f"{words} to return new values"):
        net.load_state_dict(net.state_dict())
    h.remove()
    sd = net.state_dict()
    sd["bn.weight"] = lib.zeros(4)
    sd["head.bias"] = "not a tensor"
    with pytest.raises(RuntimeError) as err:
        net.load_state_dict(sd, strict=False)
    res.append(re.sub(r"torch\.Size\(\[(\d+)\]\)", r"(\1,)", str(err.value).replace("torch.Tensor", "Tensor")))
    return res


def test_hooks_may_edit_the_keys_and_the_state_dict_as_in_torch():
    t, e = _mutating(torch), _mutating(ember)
    assert t == e
    assert 'Missing key(s) in state_dict: "made.up"' in t[1] and "hook says no" in t[1]


def _extra_strictness(lib):
    class OnlyGet(lib.nn.Module):
        def get_extra_state(self):
            return 3

    class OnlySet(lib.nn.Module):
        def set_extra_state(self, s):
            self.got = s

    res = [list(OnlyGet().state_dict().items()), list(OnlySet().state_dict())]
    for mod, sd in ((OnlyGet(), {"_extra_state": 3}), (OnlySet(), {}), (OnlySet(), {"_extra_state": 4})):
        res.append(tuple(mod.load_state_dict(sd, strict=False)))
    with pytest.raises(RuntimeError, match="Unexpected key"):
        OnlyGet().load_state_dict({"_extra_state": 3})
    m = lib.nn.Module()
    for name in ("get_extra_state", "set_extra_state"):
        with pytest.raises(RuntimeError):
            getattr(m, name)(*([1] if name.startswith("set") else []))
    return res


def test_extra_state_needs_both_methods_as_in_torch():
    assert _extra_strictness(torch) == _extra_strictness(ember)


def test_handles_remove_and_copies_keep_hooks():
    net, calls = _net(ember), []
    h = net.register_load_state_dict_pre_hook(lambda m, *a: calls.append(m))
    import copy

    twin = copy.deepcopy(net)
    twin.load_state_dict(net.state_dict())
    assert calls == [twin]  # a copy's with-module hook gets the copy, as PyTorch's _WrappedHook
    h.remove()
    net.load_state_dict(net.state_dict())
    assert calls == [twin]


class _Stamp(ember.nn.Module):
    def __init__(self, state):
        super().__init__()
        self.lin = ember.nn.Linear(2, 2)
        self.state = state

    def get_extra_state(self):
        return self.state

    def set_extra_state(self, state):
        self.state = state


class _Opaque:
    def __init__(self, v):
        self.v = v


def test_extra_state_round_trips_through_ember_save_and_load():
    m = _Stamp({"epoch": 3, "names": ["a", "b"], "t": ember.arange(3)})
    buf = io.BytesIO()
    ember.save(m.state_dict(), buf)
    buf.seek(0)
    sd = ember.load(buf)  # plain data: weights_only (the default) reads it
    fresh = _Stamp(None)
    fresh.load_state_dict(sd)
    assert fresh.state["epoch"] == 3 and fresh.state["names"] == ["a", "b"]
    assert fresh.state["t"].tolist() == [0, 1, 2]
    assert np.array_equal(fresh.lin.weight.detach().numpy(), m.lin.weight.detach().numpy())
    buf = io.BytesIO()
    ember.save(_Stamp(_Opaque(5)).state_dict(), buf)
    buf.seek(0)
    with pytest.raises(ember.serialization.WeightsOnlyError, match="_Opaque"):
        ember.load(buf)  # an arbitrary object: refused as torch.load(weights_only=True) refuses it
    buf.seek(0)
    fresh.load_state_dict(ember.load(buf, weights_only=False))
    assert isinstance(fresh.state, _Opaque) and fresh.state.v == 5


def test_torch_extra_state_checkpoint_loads_into_ember(tmp_path):
    t = _net(torch)
    t.a.steps = 9
    torch.save(t.state_dict(), tmp_path / "x.pt")
    e = _net(ember)
    e.load_state_dict(ember.load(tmp_path / "x.pt"))
    assert e.a.steps == 9
    assert np.allclose(e.head.weight.detach().numpy(), t.head.weight.detach().numpy())


def test_a_lazy_child_is_built_by_its_parents_load_state_dict():
    src = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.LazyLinear(4))
    src(ember.ones(1, 3))
    dst = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.LazyLinear(4))
    dst.load_state_dict(src.state_dict())
    assert np.array_equal(dst[1].weight.detach().numpy(), src[1].weight.detach().numpy())
