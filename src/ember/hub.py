"""``ember.hub`` (PyTorch's ``torch.hub``): pretrained weights by URL into a cache, and models from a ``hubconf.py``.

The cache is PyTorch's (``$TORCH_HOME/hub``, else ``$XDG_CACHE_HOME/torch/hub``, else ``~/.cache/torch/hub``),
so a checkpoint PyTorch downloaded is found without downloading it again. A download goes to a temporary file
beside its target, is checked against the SHA-256 prefix in the file name (``check_hash``), and is renamed into
place: an interrupted or corrupt download leaves nothing behind. Checkpoints load through :func:`ember.load`
with ``weights_only=True`` unless the caller passes False (PyTorch's default here is False; Ember never runs a
file's code without the caller's consent). ``load(dir, name, source="local")`` imports ``dir/hubconf.py``;
a GitHub repository's ``hubconf.py`` is downloaded and run only for ``trust_repo=True`` or a repository trusted
before.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import uuid
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlparse
from urllib.request import Request, urlopen

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # the SHA-256 prefix in a checkpoint's name: resnet18-f37072fd.pth
_DIR: list[str] = []  # set_dir's choice, when made
_CHUNK = 1 << 16


def get_dir() -> str:
    """The hub's directory: :func:`set_dir`'s, else ``$TORCH_HOME/hub``, else ``$XDG_CACHE_HOME/torch/hub``, else
    ``~/.cache/torch/hub`` (PyTorch's, so both share downloads)."""
    if _DIR:
        return _DIR[0]
    home = os.getenv("TORCH_HOME") or os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch")
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d: str | os.PathLike[str]) -> None:
    """Use ``d`` as the hub's directory from now on."""
    _DIR[:] = [os.path.expanduser(os.fspath(d))]


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Download ``url`` to ``dst`` atomically; with ``hash_prefix``, the file's SHA-256 must start with it
    (a ``RuntimeError`` otherwise, and nothing is written)."""
    dst = os.path.expanduser(dst)
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(dst)}.{uuid.uuid4().hex}.partial")
    digest = hashlib.sha256()
    try:
        with urlopen(Request(url, headers={"User-Agent": "ember.hub"})) as src, open(tmp, "wb") as out:
            total = src.headers.get("Content-Length") if hasattr(src, "headers") else None
            done = 0
            while chunk := src.read(_CHUNK):
                out.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                if progress and total:
                    sys.stderr.write(f"\r{done * 100 // max(int(total), 1):3d}% {url}")
            out.flush()
            os.fsync(out.fileno())
        if progress and total:
            sys.stderr.write("\n")
        if hash_prefix is not None and not digest.hexdigest().startswith(hash_prefix):
            raise RuntimeError(f'download_url_to_file: invalid hash value (expected "{hash_prefix}", got '
                               f'"{digest.hexdigest()}") for {url}')  # fmt: skip
        os.replace(tmp, dst)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)


def _single_file_zip(path: str) -> str | None:
    """The one member of a zip holding a single checkpoint (PyTorch's legacy hub format), or None."""
    if not zipfile.is_zipfile(path):
        return None
    with zipfile.ZipFile(path) as z:
        names = [n for n in z.namelist() if not n.endswith("/")]
        if len(names) != 1 or names[0].endswith("data.pkl"):  # a torch.save archive is a zip of many entries
            return None
        return names[0]


def load_state_dict_from_url(
    url: str, model_dir: str | None = None, map_location: Any = None, progress: bool = True,
    check_hash: bool = False, file_name: str | None = None, weights_only: bool = True,
) -> Any:  # fmt: skip
    """The checkpoint at ``url``, downloaded once into ``model_dir`` (default ``get_dir()/checkpoints``) and
    loaded by :func:`ember.load` (``weights_only=True`` unless the caller passes False)."""
    from .serialization import load as _load

    model_dir = model_dir or os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        sys.stdout.write(f'Downloading: "{url}" to {cached}\n')
        found = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached, found.group(1) if found else None, progress=progress)
    member = _single_file_zip(cached)
    if member is not None:
        with zipfile.ZipFile(cached) as z:
            z.extract(member, model_dir)
        cached = os.path.join(model_dir, member)
    return _load(cached, map_location=map_location, weights_only=weights_only)


# -- models from a hubconf.py ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def _on_path(folder: str) -> Iterator[None]:
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)


def _hubconf(folder: str) -> ModuleType:
    path = os.path.join(folder, "hubconf.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"hub: no hubconf.py in {folder}")
    spec = importlib.util.spec_from_file_location(f"hubconf_{uuid.uuid4().hex}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with _on_path(folder):
        spec.loader.exec_module(module)
    missing = [d for d in getattr(module, "dependencies", []) if importlib.util.find_spec(d) is None]
    if missing:
        raise RuntimeError(f"hub: missing dependencies: {', '.join(missing)}")
    return module


def _entry(module: ModuleType, model: str) -> Callable[..., Any]:
    fn = getattr(module, model, None)
    if model.startswith("_") or not callable(fn):
        raise RuntimeError(f"hub: cannot find callable {model} in hubconf")
    return fn  # type: ignore[no-any-return]


def _archive_url(owner: str, repo: str, ref: str) -> str:
    return f"https://github.com/{owner}/{repo}/zipball/{ref}"


def _trusted(hub_dir: str, owner: str, repo: str, trust_repo: Any) -> None:
    listing = Path(hub_dir) / "trusted_list"
    name = f"{owner}_{repo}"
    known = listing.read_text().split() if listing.exists() else []
    if trust_repo is True:
        if name not in known:
            listing.parent.mkdir(parents=True, exist_ok=True)
            with open(listing, "a") as f:
                f.write(name + "\n")
        return
    if name not in known:
        raise RuntimeError(
            f"hub: {owner}/{repo} is not a trusted repository: its hubconf.py is code that would run here. Pass "
            "trust_repo=True to trust it (recorded in the hub's trusted_list)"
        )


def _github_dir(github: str, force_reload: bool, trust_repo: Any, verbose: bool) -> str:
    owner_repo, _, ref = github.partition(":")
    if owner_repo.count("/") != 1:
        raise ValueError(f'hub: a GitHub repository is given as "owner/repo[:ref]", got "{github}"')
    owner, repo = owner_repo.split("/")
    ref = ref or "main"
    hub_dir = get_dir()
    _trusted(hub_dir, owner, repo, trust_repo)
    target = os.path.join(hub_dir, f"{owner}_{repo}_{ref.replace('/', '_')}")
    if os.path.isdir(target) and not force_reload:
        if verbose:
            sys.stderr.write(f"Using cache found in {target}\n")
        return target
    os.makedirs(hub_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=hub_dir) as work:
        archive = os.path.join(work, "repo.zip")
        download_url_to_file(_archive_url(owner, repo, ref), archive, progress=False)
        with zipfile.ZipFile(archive) as z:
            top = {n.split("/")[0] for n in z.namelist()}
            z.extractall(work)
        extracted = os.path.join(work, top.pop()) if len(top) == 1 else work
        shutil.rmtree(target, ignore_errors=True)
        shutil.move(extracted, target)
    return target


def _folder(repo_or_dir: str, source: str, force_reload: bool, trust_repo: Any, verbose: bool) -> str:
    if source not in ("github", "local"):
        raise ValueError(f'hub: unknown source "{source}"; allowed values: "github" | "local"')
    if source == "local":
        return os.path.expanduser(repo_or_dir)
    return _github_dir(repo_or_dir, force_reload, trust_repo, verbose)


def load(
    repo_or_dir: str, model: str, *args: Any, source: str = "github", trust_repo: Any = "check",
    force_reload: bool = False, verbose: bool = True, skip_validation: bool = False, **kwargs: Any,
) -> Any:  # fmt: skip
    """``model(*args, **kwargs)``, the entry point of ``repo_or_dir``'s ``hubconf.py`` (a local directory, or a
    GitHub ``owner/repo[:ref]`` downloaded into the hub's directory)."""
    folder = _folder(repo_or_dir, source, force_reload, trust_repo, verbose)
    return _entry(_hubconf(folder), model)(*args, **kwargs)


def list(github: str, force_reload: bool = False, skip_validation: bool = False, trust_repo: Any = "check",
         verbose: bool = True, *, source: str = "github") -> builtins.list[str]:  # fmt: skip
    """The entry points of a repository's (or, with ``source="local"``, a directory's) ``hubconf.py``."""
    module = _hubconf(_folder(github, source, force_reload, trust_repo, verbose))
    return [n for n in dir(module) if callable(getattr(module, n)) and not n.startswith("_")]


def help(github: str, model: str, force_reload: bool = False, skip_validation: bool = False,
         trust_repo: Any = "check", *, source: str = "github") -> str | None:  # fmt: skip
    """The docstring of an entry point."""
    return _entry(_hubconf(_folder(github, source, force_reload, trust_repo, False)), model).__doc__
