"""Downloading and unpacking data files: checked digests, atomic writes, safe archive extraction."""

from __future__ import annotations

import hashlib
import sys
import tarfile
import urllib.request
from pathlib import Path

__all__ = ["download_url", "extract_archive"]


def download_url(url: str, dest: str | Path, md5: str | None = None, sha256: str | None = None) -> Path:
    """Fetch ``url`` into ``dest`` (atomically: a failed or corrupt download leaves nothing), checking a digest."""
    from ..record import atomic_write

    dest = Path(dest)
    name = dest.name
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            total = int(r.headers.get("Content-Length") or 0)
            chunks, got = [], 0
            while chunk := r.read(1 << 16):
                chunks.append(chunk)
                got += len(chunk)
                if total and sys.stderr.isatty():  # no carriage-return spam in a log file
                    sys.stderr.write(f"\rdownloading {name}: {100 * got // total}%")
            sys.stderr.write("\n" if sys.stderr.isatty() else f"downloaded {name}\n")
    except OSError as e:
        raise ConnectionError(
            f"could not download {url} ({e}); place the file in {dest.parent} (as {name}) instead"
        ) from None
    data = b"".join(chunks)
    for algorithm, expected in (("md5", md5), ("sha256", sha256)):
        if expected and hashlib.new(algorithm, data).hexdigest() != expected:
            raise ValueError(f"{url}: {algorithm} mismatch (expected {expected}); the download is corrupted")
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(dest, data)
    return dest


def extract_archive(archive: str | Path, into: str | Path) -> None:
    """Unpack a ``.tar``/``.tar.gz`` into ``into``, refusing members that would land outside it or links."""
    archive, into = Path(archive), Path(into)
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")
    except (tarfile.TarError, OSError) as e:
        raise ValueError(f"{archive}: cannot unpack this archive ({e})") from None
