"""DataLoader worker *threads*: a small pool of daemon threads.

``concurrent.futures.ThreadPoolExecutor`` joins its threads when the interpreter exits, so a
``__getitem__`` that never returns would hang the program even after the loader's ``timeout`` fired.
These threads are daemons: a stuck one is abandoned (it cannot be killed) and the program still exits.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["ThreadWorkers"]


class ThreadWorkers:
    """``n`` daemon threads running submitted calls in order; ``init(worker_id)`` runs first in each."""

    def __init__(self, n: int, init: Callable[[int], None], name: str = "ember-data") -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._run, args=(i, init), name=f"{name}-{i}", daemon=True)
                         for i in range(n)]  # fmt: skip
        for t in self._threads:
            t.start()

    def _run(self, wid: int, init: Callable[[int], None]) -> None:
        try:
            init(wid)
        except BaseException as e:  # every job of this worker reports the failed initialisation
            err: BaseException | None = e
        else:
            err = None
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fut, fn, args = job
            if not fut.set_running_or_notify_cancel():
                continue
            if err is not None:
                fut.set_exception(RuntimeError(f"DataLoader: worker_init_fn of worker {wid} raised {err!r}"))
                continue
            try:
                fut.set_result(fn(*args))
            except BaseException as e:
                fut.set_exception(e)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        self._jobs.put((fut, fn, args))
        return fut

    def shutdown(self, wait: bool = True) -> None:
        """Stop the threads once their current call returns; ``wait`` joins them (never a stuck one)."""
        for _ in self._threads:
            self._jobs.put(None)
        if wait:
            for t in self._threads:
                t.join()
        self._threads = []
