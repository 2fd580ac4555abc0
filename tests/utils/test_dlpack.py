"""DLPack exchange (``from_dlpack``, ``to_dlpack``, ``Tensor.__dlpack__``) against torch: the same program under
both libraries, the same results; memory is shared both ways."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _run(libname: str) -> list[object]:
    lib = importlib.import_module(libname)
    said: list[object] = []
    a = np.arange(6.0).reshape(2, 3)
    t = lib.from_dlpack(a)
    a[0, 0] = 9  # the tensor sees the array's write
    said += [t.tolist(), str(t.dtype).split(".")[1], tuple(t.shape)]
    t[1, 1] = -1  # and the array the tensor's
    said.append(a.tolist())
    b = np.from_dlpack(t)
    b[0, 1] = 7
    said += [t.tolist(), str(b.dtype)]
    tt = lib.arange(6, dtype=lib.int32).reshape(2, 3).t()  # a transposed view keeps its strides
    n = np.from_dlpack(tt)
    said += [n.tolist(), n.strides, tuple(int(v) for v in tt.__dlpack_device__())]
    capsule = lib.utils.dlpack.to_dlpack(lib.arange(3))
    said += [lib.utils.dlpack.from_dlpack(capsule).tolist(), type(capsule).__name__]
    said.append(lib.from_dlpack(np.array([True, False])).tolist())
    said.append(lib.from_dlpack(lib.ones(2)).tolist())
    with pytest.raises(BufferError, match="require gradient"):
        np.from_dlpack(lib.ones(2, requires_grad=True))
    return said


def test_dlpack_matches_torch():
    assert _run("ember") == _run("torch")


def test_bad_input_is_refused_with_a_type_torch_code_catches():
    with pytest.raises(RuntimeError, match="expected an object with __dlpack__"):
        ember.from_dlpack([1, 2])
    assert str(ember.from_dlpack(np.zeros(2, np.uint16)).dtype) == "ember.uint16"  # (PyTorch's limited-support uint16)
