"""``Sequential``, ``ModuleList`` and ``ModuleDict`` with PyTorch's list and dict methods, each run under PyTorch and
Ember alike: names after deletion (renumbered), shared modules after ``*``, None entries, and the errors."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


def _kinds(container):
    return [None if m is None else type(m).__name__ for m in container]


def _names(container):
    return list(container._modules)


def _sequential(lib):
    nn = lib.nn
    a, b, c, d = nn.ReLU(), nn.Tanh(), nn.Sigmoid(), nn.ELU()
    s = nn.Sequential(a, b, c)
    out = [_kinds(s[1:]), _kinds(s[::-1]), type(s[-1]).__name__]
    del s[0]
    out += [_names(s), _kinds(s)]
    s.insert(1, d)
    s.insert(-1, nn.Identity())
    s.insert(len(s), nn.ReLU())
    out += [_names(s), _kinds(s)]
    out += [type(s.pop(0)).__name__, _kinds(s.pop(slice(0, 2))), _names(s), _kinds(s)]
    s.extend([nn.Tanh()])
    t = s + nn.Sequential(nn.ReLU())
    out += [_kinds(t), _names(t)]
    s += nn.Sequential(nn.ELU())
    out += [_kinds(s)]
    m = nn.Sequential(a, b) * 2
    out += [_kinds(m), m[0] is m[2], _kinds(3 * nn.Sequential(a))]
    m *= 2
    out += [len(m), m[5] is b]
    s[0] = nn.Sigmoid()
    out += [_kinds(s)]
    named = nn.Sequential(__import__("collections").OrderedDict([("x", nn.ReLU()), ("y", nn.Tanh())]))
    del named[1]  # deleting renumbers even named entries, as PyTorch does
    out += [_names(named)]
    return out


def test_sequential_list_methods():
    assert _sequential(ember) == _sequential(torch)


@LIBS
def test_sequential_refusals(lib):
    nn = lib.nn
    s = nn.Sequential(nn.ReLU(), nn.Tanh())
    with pytest.raises(IndexError, match="index 2 is out of range"):
        s[2]
    with pytest.raises(IndexError, match="index -3 is out of range"):
        del s[-3]
    with pytest.raises(IndexError, match="Index out of range: 5"):
        s.insert(5, nn.ReLU())
    with pytest.raises(AssertionError, match="module should be of type"):
        s.insert(0, 3)
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class"):
        s + [nn.ReLU()]
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class"):
        s += [nn.ReLU()]
    with pytest.raises(ValueError, match="Non-positive multiplication factor 0"):
        s * 0
    with pytest.raises(TypeError, match="unsupported operand"):
        s * 1.5


def _module_list(lib):
    nn = lib.nn
    a, b, c = nn.ReLU(), nn.Tanh(), nn.Sigmoid()
    lst = nn.ModuleList([a, None, b])  # None entries, as x-transformers makes
    out = [len(lst), _kinds(lst), [n for n, _ in lst.named_children()], lst[1] is None, _kinds(lst[::2])]
    lst[1] = c
    out += [_kinds(lst), len(list(lst.modules()))]
    del lst[-1]
    out += [_names(lst), _kinds(lst)]
    lst.insert(0, nn.ELU())
    lst += [nn.Identity()]
    out += [_names(lst), _kinds(lst)]
    out += [type(lst.pop(1)).__name__, _kinds(lst.pop(slice(1, None, 2))), _names(lst), _kinds(lst)]
    both = lst + nn.ModuleList([a])
    out += [type(both).__name__, _kinds(both), both[-1] is a]
    del lst[:]
    out += [len(lst)]
    return out


def test_module_list_list_methods_and_none_entries():
    assert _module_list(ember) == _module_list(torch)


@LIBS
def test_module_list_refusals(lib):
    nn = lib.nn
    lst = nn.ModuleList([nn.ReLU()])
    with pytest.raises(IndexError, match="index 1 is out of range"):
        lst[1]
    with pytest.raises(IndexError, match="index -2 is out of range"):
        lst[-2] = nn.ReLU()
    with pytest.raises(TypeError, match="cannot assign 'int' as child module '0'"):
        lst[0] = 3
    with pytest.raises(TypeError, match="is not a Module subclass"):
        lst.append(3)
    with pytest.raises(TypeError, match=r"ModuleList\.extend should be called with an iterable, but got int"):
        lst.extend(3)


@LIBS
def test_module_dict_none_entries(lib):
    nn = lib.nn
    d = nn.ModuleDict({"a": None, "b": nn.ReLU()})
    assert d["a"] is None and list(d) == ["a", "b"] and [n for n, _ in d.named_children()] == ["b"]
    d["a"] = nn.Tanh()
    assert type(d["a"]).__name__ == "Tanh"
    with pytest.raises(KeyError):
        d["zz"]
    with pytest.raises(KeyError):
        d["x.y"] = nn.ReLU()
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        d["c"] = 3
