"""Atomic file writes: a temporary file in the same folder, fsync, rename (a crash never destroys the old file).

Files get the permissions other tools give them: ``0o666`` less the umask for a new file, the old file's
mode when replacing one. A file without write permission is not replaced (``PermissionError``), as ``cp``
or an editor would refuse. The temporary file is ``.NAME.PID.RANDOM.tmp``; a save that was killed
(``kill -9``, power loss) leaves one behind, and the next save of the same target removes those whose
process is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

__all__ = ["atomic_open", "atomic_write"]

_ACTIVE: set[str] = set()  # temporary files this process is writing now (several threads may save)
_ACTIVE_LOCK = threading.Lock()
_LEGACY_AGE_S = 3600.0  # temporary files without a pid (older Ember) are removed once this old


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):  # exists but belongs to someone else, or cannot tell
        return True
    return True


def _remove_stale_temps(path: Path) -> None:
    """Delete temporary files that an interrupted save of ``path`` left in its folder."""
    pattern = re.compile(re.escape(f".{path.name}.") + r"(?:(\d+)\.)?[0-9A-Za-z_]+\.tmp")
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        m = pattern.fullmatch(name)
        if m is None:
            continue
        tmp = path.parent / name
        with _ACTIVE_LOCK:
            if str(tmp) in _ACTIVE:
                continue
        with contextlib.suppress(OSError):
            if m.group(1) is not None:  # ours but not active (see above), or a process that is gone
                stale = int(m.group(1)) == os.getpid() or not _pid_alive(int(m.group(1)))
            else:
                stale = time.time() - tmp.stat().st_mtime > _LEGACY_AGE_S
            if stale:
                tmp.unlink()


def _check_writable(path: Path) -> int | None:
    """The mode of an existing ``path`` (None when there is none); PermissionError when it is read-only."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{path}: is a folder, not a file")
    writable_bits = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
    if not st.st_mode & writable_bits or not os.access(path, os.W_OK):
        raise PermissionError(f"{path}: the file is read-only; not replacing it (make it writable or save elsewhere)")
    return stat.S_IMODE(st.st_mode)


@contextlib.contextmanager
def atomic_open(path: str | Path) -> Iterator[IO[bytes]]:
    """Write to a temporary file beside ``path``; fsync it and rename it over ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    old_mode = _check_writable(path)
    _remove_stale_temps(path)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    # 0o666 here lets the kernel apply the umask, as for any file a tool creates (mkstemp would give 0o600).
    with _ACTIVE_LOCK:
        _ACTIVE.add(str(tmp))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        with os.fdopen(fd, "wb") as f:
            if old_mode is not None:
                os.chmod(tmp, old_mode)
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE.discard(str(tmp))
    with contextlib.suppress(OSError):  # make the rename itself durable
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def atomic_write(path: str | Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically."""
    with atomic_open(path) as f:
        f.write(data)
