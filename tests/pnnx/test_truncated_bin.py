"""A ``.pnnx.bin`` cut at any byte is refused as "truncated or corrupt", naming the file (issue 29)."""

from __future__ import annotations

import numpy as np
import pytest

import ember.pnnx as ep

from .conftest import write_pnnx


def test_a_bin_cut_anywhere_is_truncated_or_corrupt(tmp_path):
    w = np.arange(60, dtype=np.float32).reshape(2, 30)
    p = write_pnnx(tmp_path, "m", ["pnnx.Input in0 0 1 0 #0=(1,30)f32",
                                   "nn.Linear fc 1 1 0 1 bias=False in_features=30 out_features=2 @weight=(2,30)f32",
                                   "pnnx.Output out 1 0 1"], {"fc.weight": w})  # fmt: skip
    b = tmp_path / "m.pnnx.bin"
    data = b.read_bytes()
    for cut in sorted({4, 20, 30, 35, 39, 40, 100, len(data) // 2, len(data) - 60, len(data) - 22, len(data) - 1}):
        b.write_bytes(data[:cut])
        with pytest.raises(ep.PnnxFormatError, match=r"m\.pnnx\.bin.*truncated or corrupt") as info:
            ep.load(p)
        assert "not a zip file" not in str(info.value), cut
    b.write_bytes(data)
    assert ep.load(p) is not None
