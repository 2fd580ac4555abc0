"""``Tensor.shape`` and ``Tensor.size()`` give a ``Size`` that behaves as ``torch.Size``: the same code, run under both
libraries, gives the same answers (repr with the library's name swapped, equality, hashing, slicing, ``+``/``*``,
pickling, json, NumPy, construction and its errors, use as a shape argument, the meta device)."""

from __future__ import annotations

import copy
import io
import json
import pickle
from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _r(lib: Any, v: Any) -> str:
    return repr(v).replace(lib.__name__, "LIB")


def _size_answers(lib: Any) -> list[Any]:
    x = lib.zeros(2, 3)
    s = x.shape
    out: list[Any] = [type(s) is lib.Size, type(x.size()) is lib.Size, type(x.t().shape) is lib.Size]
    out.append((_r(lib, s), _r(lib, str(s)), _r(lib, f"{s}"), _r(lib, "%s" % (s,)), _r(lib, [s])))  # noqa: UP031
    out.append((_r(lib, lib.tensor(1.0).shape), _r(lib, lib.Size([]))))
    out.append(
        (
            s == (2, 3),
            s == [2, 3],
            (2, 3) == s,  # noqa: SIM300
            s == lib.Size([2, 3]),
            s != (3, 2),
            x.shape == x.size(),
        )
    )
    out.append((hash(s) == hash((2, 3)), {s: 1}[(2, 3)], {(2, 3): 1}[s]))
    for v in (s[1:], s[:0], s[::-1], s + (1,), (1,) + s, s + s, s * 2, 2 * s, s[0], s[-1]):
        out.append((type(v).__name__, _r(lib, v)))
    out.append((s.numel(), lib.Size([]).numel(), s[1:].numel(), s.count(2), s.index(3), len(s), list(s), max(s)))
    a, b = s
    out.append((a, b, type(a).__name__))
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        p = pickle.loads(pickle.dumps(s, proto))
        out.append((proto, type(p) is lib.Size, _r(lib, p)))
    out.append((type(copy.copy(s)) is lib.Size, type(copy.deepcopy(s)) is lib.Size))
    out.append((json.dumps(s), json.dumps({"s": x.size()}), np.array(s).tolist(), np.zeros(s).shape))
    made = (lib.Size([1, 2]), lib.Size(i for i in [1, 2]), lib.Size(), lib.Size((4,)), lib.Size([np.int64(3), True]))
    out.append([_r(lib, m) for m in made] + [_r(lib, lib.Size([lib.tensor(3)]))])
    for bad in ([2.0], ["a"], [None], 3, [1, 1.5]):
        with pytest.raises(TypeError) as e:
            lib.Size(bad)
        out.append(str(e.value).replace(lib.__name__, "LIB"))
    with pytest.raises(TypeError):
        _ = s + [1]  # type: ignore[operator]
    with pytest.raises(TypeError):
        format(s, ">20")
    y = lib.arange(6.0)
    used = (y.view(s), y.reshape(s), lib.zeros(3).expand(lib.Size([2, 3])), x.new_zeros(s), lib.zeros(x.shape),
            lib.ones(x.shape[1:]), y.view(*s), x.view(s + (1,)), lib.empty(x.size()), lib.full(s, 1.0),
            lib.randn(s), x.new_empty(s[::-1]))  # fmt: skip
    out.append([tuple(u.shape) for u in used])
    m = lib.zeros(2, 3, device="meta")
    out.append((type(m.shape) is lib.Size, _r(lib, m.shape), _r(lib, m.sum(0).shape)))
    return out


def test_size_like_torch_size() -> None:
    assert _size_answers(ember) == _size_answers(torch)


def test_shape_is_fresh_and_follows_in_place_resizes() -> None:
    x = ember.zeros(2, 3)
    s = x.shape
    x.resize_(4)
    assert s == (2, 3) and x.shape == (4,) and type(x.shape) is ember.Size


def test_messages_print_shapes_as_tuples() -> None:
    """A message prints a tensor's shape as ``(2, 3)``, as it prints the shapes a user passes (never mixing forms)."""
    with pytest.raises(RuntimeError, match=r"shapes \(2, 3\) and \(4, 5\)") as e:
        ember.zeros(2, 3) @ ember.zeros(4, 5)
    assert "Size" not in str(e.value)
    with pytest.raises(RuntimeError) as e:
        ember.zeros(2, 6).view(5, 7)
    assert "Size" not in str(e.value)


def _saved_and_loaded(lib: Any) -> list[str]:
    x = lib.zeros(2, 3)
    out = []
    for obj in ({"s": x.shape, "l": [x.size()]}, {"s": x.shape[1:], "set": {1}}):  # a record; a pickle (the set)
        for weights_only in (True, False):
            b = io.BytesIO()
            lib.save(obj, b)
            b.seek(0)
            out.append(_r(lib, lib.load(b, weights_only=weights_only)))
    return out


def test_save_load_keeps_a_size() -> None:
    assert _saved_and_loaded(ember) == _saved_and_loaded(torch)


def test_load_of_a_torch_checkpoint_gives_sizes() -> None:
    b = io.BytesIO()
    torch.save({"s": torch.zeros(2, 3).shape, "l": [torch.Size([4])]}, b)
    b.seek(0)
    d = ember.load(b)
    assert type(d["s"]) is ember.Size and d["s"] == (2, 3) and type(d["l"][0]) is ember.Size
