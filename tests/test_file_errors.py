"""Truncated and corrupt files are refused as "truncated or corrupt", naming the file; a weights file
whose keys match nothing is refused (issue 29). Every format Ember reads, cut at many points."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.data import NpzDataset
from ember.record import RecordError, load_weights, save_torch_state_dict

CUTS = (1, 2, 5, 9, 16, 30, 64)


def _cuts(n):
    return sorted({c for c in (*CUTS, n // 4, n // 2, 3 * n // 4, n - 30, n - 22, n - 9, n - 1) if 0 < c < n})


def _files(tmp_path):
    m = ember.nn.Linear(30, 10)
    ember.save({"w": ember.arange(300.0).reshape(30, 10), "b": ember.zeros(3), "n": 3}, tmp_path / "e.ember")
    for ext in (".mpk", ".mpk.gz", ".json.gz", ".safetensors"):
        ember.record.save(m, tmp_path / f"m{ext}")
    save_torch_state_dict(m, tmp_path / "written.pt")
    out = [(p, [lambda p: ember.load(p)]) for p in sorted(tmp_path.iterdir())]
    for p, loaders in out:
        if p.suffix != ".ember" and p.suffix != ".pt":
            loaders.append(lambda p: ember.record.load(p))
        if p.suffix == ".pt":
            loaders.append(lambda p: load_weights(ember.nn.Linear(30, 10), p))
    np.savez(tmp_path / "a.npz", x=np.arange(300.0).reshape(30, 10), y=np.arange(30))
    out.append((tmp_path / "a.npz", [lambda p: NpzDataset(p)]))
    return out


def test_every_format_cut_anywhere_is_truncated_or_corrupt(tmp_path):
    files = _files(tmp_path)
    cut = tmp_path / "cut"
    cut.mkdir()
    for path, loaders in files:
        data = path.read_bytes()
        for n in _cuts(len(data)):
            target = cut / path.name
            target.write_bytes(data[:n])
            for load in loaders:
                with pytest.raises(ValueError, match="truncated or corrupt") as info:  # RecordError is a ValueError
                    load(target)
                assert str(target) in str(info.value), (path.name, n, str(info.value))
        for load in loaders:
            load(path)  # the whole file loads


def test_a_torch_file_cut_anywhere(tmp_path, torch):
    torch.save({"w": torch.arange(300.0).reshape(30, 10), "b": torch.zeros(3)}, tmp_path / "t.pt")
    data = (tmp_path / "t.pt").read_bytes()
    for n in _cuts(len(data)):
        (tmp_path / "c.pt").write_bytes(data[:n])
        for load in (ember.load, lambda p: load_weights(ember.nn.Linear(10, 30), p)):
            with pytest.raises(RecordError, match=r"c\.pt: truncated or corrupt"):
                load(tmp_path / "c.pt")


def test_load_weights_whose_keys_match_nothing_says_so(tmp_path):
    src = ember.nn.Sequential(ember.nn.Linear(3, 2))
    save_torch_state_dict(src, tmp_path / "w.pt")  # keys 0.weight, 0.bias
    dst = ember.nn.Linear(3, 2)  # keys weight, bias
    with pytest.raises(RecordError, match=r"w\.pt: none of its 2 keys matches the module's 2 .*remap"):
        load_weights(dst, tmp_path / "w.pt")
    result = load_weights(dst, tmp_path / "w.pt", remap=[(r"^0\.", "")])
    assert not result.missing_keys and not result.unexpected_keys
    assert dst.weight.tolist() == src[0].weight.tolist()
