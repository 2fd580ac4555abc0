"""``ember.hub``: checkpoints by URL into PyTorch's cache (atomic, hash-checked, loaded weights-only by default) and
models from a ``hubconf.py``; beside ``torch.hub`` where both can run here (``file://`` URLs: no network)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import hub

HUBCONF = '''
dependencies = ["numpy"]
import ember


def tiny(out_features=2):
    """A tiny linear model."""
    ember.manual_seed(0)
    return ember.nn.Linear(3, out_features)


def _private():
    return 1
'''


@pytest.fixture
def hub_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "_DIR", [])
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    return tmp_path


def _checkpoint(folder: Path) -> tuple[Path, dict]:
    sd = {"w": ember.arange(6.0).reshape(2, 3), "b": ember.ones(2)}
    raw = folder / "raw.pth"
    ember.save(sd, raw)
    digest = hashlib.sha256(raw.read_bytes()).hexdigest()
    named = folder / f"model-{digest[:8]}.pth"
    raw.rename(named)
    return named, sd


def test_the_cache_directory_is_pytorchs(hub_dir, monkeypatch):
    torch = pytest.importorskip("torch")
    assert hub.get_dir() == str(hub_dir / "home" / "hub") == torch.hub.get_dir()
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(hub_dir / "xdg"))
    assert hub.get_dir() == torch.hub.get_dir() == str(hub_dir / "xdg" / "torch" / "hub")
    hub.set_dir(hub_dir / "mine")
    assert hub.get_dir() == str(hub_dir / "mine")


def test_load_state_dict_from_url_downloads_once_checks_the_hash_and_loads(hub_dir):
    src, sd = _checkpoint(hub_dir)
    out = hub.load_state_dict_from_url(src.as_uri(), check_hash=True, progress=False)
    assert {k: v.tolist() for k, v in out.items()} == {k: v.tolist() for k, v in sd.items()}
    cached = Path(hub.get_dir()) / "checkpoints" / src.name
    assert cached.exists()
    src.unlink()  # the second call reads the cache: no download
    assert hub.load_state_dict_from_url(src.as_uri(), check_hash=True)["b"].tolist() == [1.0, 1.0]


def test_a_wrong_hash_is_refused_and_leaves_nothing(hub_dir):
    torch = pytest.importorskip("torch")
    src, _ = _checkpoint(hub_dir)
    bad = src.with_name("model-deadbeef.pth")
    src.rename(bad)
    for lib in (hub, torch.hub):
        with pytest.raises(RuntimeError, match="invalid hash value"):
            lib.load_state_dict_from_url(bad.as_uri(), model_dir=str(hub_dir / "ck"), check_hash=True, progress=False)
        assert not list((hub_dir / "ck").iterdir())  # no partial file, no cached file


def test_pytorchs_legacy_single_file_zip_is_opened(hub_dir):
    src, sd = _checkpoint(hub_dir)
    zipped = hub_dir / "legacy.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        z.write(src, "weights.pth")
    out = hub.load_state_dict_from_url(zipped.as_uri(), model_dir=str(hub_dir / "ck"), progress=False)
    assert out["w"].tolist() == sd["w"].tolist()


def test_a_whole_pickled_model_needs_weights_only_false(hub_dir):
    path = hub_dir / "whole.pth"
    ember.save(ember.nn.Linear(2, 2), path)
    with pytest.raises(Exception, match="weights_only"):
        hub.load_state_dict_from_url(path.as_uri(), model_dir=str(hub_dir / "ck"), progress=False)
    m = hub.load_state_dict_from_url(path.as_uri(), model_dir=str(hub_dir / "ck"), weights_only=False)
    assert isinstance(m, ember.nn.Linear)


def test_local_hubconf_entry_points(hub_dir):
    repo = hub_dir / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(HUBCONF)
    m = hub.load(str(repo), "tiny", out_features=4, source="local")
    assert isinstance(m, ember.nn.Linear) and m.out_features == 4
    assert "tiny" in hub.list(str(repo), source="local") and "_private" not in hub.list(str(repo), source="local")
    assert hub.help(str(repo), "tiny", source="local") == "A tiny linear model."
    with pytest.raises(RuntimeError, match="cannot find callable nope"):
        hub.load(str(repo), "nope", source="local")
    with pytest.raises(ValueError, match="unknown source"):
        hub.load(str(repo), "tiny", source="gitlab")


def test_a_github_repository_runs_only_when_trusted(hub_dir, monkeypatch):
    archive = hub_dir / "owner-repo-abc123.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("owner-repo-abc123/hubconf.py", HUBCONF)
    monkeypatch.setattr(hub, "_archive_url", lambda owner, repo, ref: archive.as_uri())
    with pytest.raises(RuntimeError, match="not a trusted repository"):
        hub.load("owner/repo", "tiny")
    assert not (Path(hub.get_dir()) / "owner_repo_main").exists()
    m = hub.load("owner/repo", "tiny", trust_repo=True, verbose=False)
    assert isinstance(m, ember.nn.Linear)
    archive.unlink()  # trusted and cached from now on: no download
    again = hub.load("owner/repo", "tiny", verbose=False)
    assert np.array_equal(again.weight.detach().numpy(), m.weight.detach().numpy())
