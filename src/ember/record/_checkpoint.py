"""``Checkpointer``: model + optimizer + scheduler + counters + RNG state in one file; keep last N and best."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from .._creation import get_rng_state, set_rng_state
from ._atomic import atomic_write
from ._record import Record
from ._recorder import NamedMpkRecorder, Recorder, RecordError
from ._state import record_to_state, state_to_record

__all__ = ["Checkpointer"]


class Checkpointer:
    """Save and restore training state in ``directory``.

    Checkpoints are written at full ("as is") precision so that resuming reproduces an uninterrupted
    run exactly. ``keep_last`` newest files are kept, plus the ``keep_best`` best by ``metric``.
    """

    def __init__(
        self,
        directory: str | Path,
        keep_last: int = 3,
        metric: str | None = None,
        mode: str = "min",
        keep_best: int = 1,
        recorder: Recorder | None = None,
    ) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"Checkpointer: mode must be 'min' or 'max', got {mode!r}")
        if keep_last < 1:
            raise ValueError(f"Checkpointer: keep_last must be at least 1, got {keep_last}")
        self.directory = Path(directory)
        self.keep_last, self.metric, self.mode, self.keep_best = keep_last, metric, mode, keep_best
        self.recorder = recorder or NamedMpkRecorder()
        self._index_path = self.directory / "checkpoints.json"

    # -- index ---------------------------------------------------------------------------------------
    def _index(self) -> list[dict[str, Any]]:
        if not self._index_path.exists():
            return []
        try:
            return list(json.loads(self._index_path.read_text()))
        except (json.JSONDecodeError, TypeError) as e:
            raise RecordError(f"{self._index_path}: corrupted checkpoint index ({e})") from None

    def _write_index(self, entries: list[dict[str, Any]]) -> None:
        atomic_write(self._index_path, json.dumps(entries, indent=1).encode())

    def paths(self) -> list[Path]:
        """Checkpoint files, oldest first."""
        return [self.directory / e["file"] for e in self._index()]

    @property
    def best_path(self) -> Path | None:
        ranked = self._ranked(self._index())
        return self.directory / ranked[0]["file"] if ranked else None

    def _ranked(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        scored = [e for e in entries if e.get("score") is not None]
        return sorted(scored, key=lambda e: e["score"], reverse=self.mode == "max")

    # -- save / load ---------------------------------------------------------------------------------
    def save(
        self,
        epoch: int,
        model: Any,
        optimizer: Any = None,
        scheduler: Any = None,
        step: int = 0,
        metrics: dict[str, float] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Path:
        """Write one checkpoint for ``epoch``; prune old ones; return its path."""
        rec = Record(item_type="checkpoint")
        rec.merge("model", model.into_record())
        meta: dict[str, Any] = {"epoch": epoch, "step": step, "metrics": metrics or {}, "metadata": metadata or {},
                                "rng": get_rng_state()}  # fmt: skip
        if optimizer is not None:
            orec = state_to_record(optimizer.state_dict(), "optimizer")
            rec.merge("optimizer", orec)
            meta["optimizer"] = orec.meta
        if scheduler is not None:
            meta["scheduler"] = state_to_record(scheduler.state_dict(), "scheduler").meta
        rec.meta = meta
        path = self.recorder.save(rec, self.directory / f"checkpoint-{epoch:05d}", precision="as_is")
        score = (metrics or {}).get(self.metric) if self.metric else None
        entries = [e for e in self._index() if e["file"] != path.name]
        entries.append({"file": path.name, "epoch": epoch, "step": step, "score": score})
        self._write_index(self._prune(entries))
        return path

    def _prune(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        entries.sort(key=lambda e: (e["epoch"], e["step"]))
        keep = {e["file"] for e in entries[-self.keep_last :]}
        keep |= {e["file"] for e in self._ranked(entries)[: self.keep_best]}
        for e in entries:
            if e["file"] not in keep:
                (self.directory / e["file"]).unlink(missing_ok=True)
        return [e for e in entries if e["file"] in keep]

    def load(
        self,
        path: str | Path,
        model: Any,
        optimizer: Any = None,
        scheduler: Any = None,
        device: Any = None,
        restore_rng: bool = True,
    ) -> dict[str, Any]:
        """Restore ``model`` (and optimizer, scheduler, RNG) from ``path``; return epoch, step, metrics, metadata."""
        return self._apply(self._read(path, device), path, model, optimizer, scheduler, restore_rng)

    def _read(self, path: str | Path, device: Any) -> Record:
        rec = self.recorder.load(path, device=device)
        if rec.item_type != "checkpoint":
            raise RecordError(f"{path}: holds a {rec.item_type!r} record, not a checkpoint")
        return rec

    def _apply(self, rec: Record, path: str | Path, model: Any, optimizer: Any, scheduler: Any, restore_rng: bool
               ) -> dict[str, Any]:  # fmt: skip
        rec.sub("model").load_into(model, True, source=f"{path} (model)")
        if optimizer is not None:
            if "optimizer" not in rec.meta:
                raise RecordError(f"{path}: has no optimizer state")
            orec = rec.sub("optimizer", "optimizer")
            orec.meta = rec.meta["optimizer"]
            optimizer.load_state_dict(record_to_state(orec))
        if scheduler is not None:
            if "scheduler" not in rec.meta:
                raise RecordError(f"{path}: has no scheduler state")
            scheduler.load_state_dict(record_to_state(Record({}, "scheduler", rec.meta["scheduler"])))
        if restore_rng and "rng" in rec.meta:
            set_rng_state(rec.meta["rng"])
        info = {k: rec.meta.get(k) for k in ("epoch", "step", "metrics", "metadata")}
        info["path"] = Path(path)
        return info

    def load_latest(
        self, model: Any, optimizer: Any = None, scheduler: Any = None, device: Any = None
    ) -> dict[str, Any] | None:
        """Restore the newest intact checkpoint, or return None when there is none.

        A newest file that cannot be read (truncated by a crash, corrupted, deleted) is skipped with a
        warning naming it and the reason, and the next newest is used. The returned dict has ``path``.
        """
        files = self.paths()
        if not files:
            return None
        problems = []
        for path in reversed(files):
            try:
                rec = self._read(path, device)
            except (RecordError, OSError) as e:
                problems.append(f"{path.name}: {e}")
                continue
            if problems:
                warnings.warn(f"Checkpointer: skipped unreadable checkpoint(s) and resumed from {path.name}: "
                              + "; ".join(problems), stacklevel=2)  # fmt: skip
            return self._apply(rec, path, model, optimizer, scheduler, True)
        raise RecordError(f"{self.directory}: no intact checkpoint to resume from: " + "; ".join(problems))
