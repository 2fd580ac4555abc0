"""``ember.multiprocessing``: the standard library's ``multiprocessing``, plus what PyTorch adds to it.

Everything in :mod:`multiprocessing` is here under the same name (``Process``, ``Queue``,
``get_context``, ``set_start_method`` ...). Tensors and modules pickle (values, dtype, device,
``requires_grad``; parameters keep their ids), and a tensor moved to shared memory with
``share_memory_()`` (or a module with ``share_memory()``) is rebuilt onto the same memory in the
receiving process, so Hogwild-style training works with ``fork`` and ``spawn``::

    model.share_memory()
    procs = [mp.Process(target=train, args=(model,)) for _ in range(4)]

``spawn(fn, args, nprocs)`` runs ``fn(rank, *args)`` in ``nprocs`` processes, as
``torch.multiprocessing.spawn`` does. Sharing strategies are accepted for compatibility; Ember always
uses named POSIX shared memory. Only CPU tensors are shared: ``share_memory_()`` refuses a CUDA tensor
(Ember has no CUDA IPC; a pickled CUDA tensor is a copy of its values).
"""

from __future__ import annotations

import multiprocessing as _mp
import traceback
from collections.abc import Callable
from multiprocessing import *  # noqa: F403 - the standard library's names
from typing import Any

from ._shared import is_shared, share_memory_

__all__ = [*_mp.__all__, "ProcessExitedException", "ProcessRaisedException", "get_all_sharing_strategies",
           "get_sharing_strategy", "is_shared", "set_sharing_strategy", "share_memory_", "spawn"]  # fmt: skip

_STRATEGIES = ("file_descriptor", "file_system")
_strategy = "file_descriptor"


def get_all_sharing_strategies() -> set[str]:
    """The ways tensors can be shared between processes: ``file_descriptor`` and ``file_system``."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The current sharing strategy (``set_sharing_strategy``)."""
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Accepted for PyTorch compatibility (both strategies mean named POSIX shared memory in Ember)."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"set_sharing_strategy: unknown strategy {new_strategy!r}; expected one of {_STRATEGIES}")
    _strategy = new_strategy


class ProcessRaisedException(_mp.ProcessError):
    """A process started by ``spawn`` raised; the message holds its traceback."""


class ProcessExitedException(_mp.ProcessError):
    """A process started by ``spawn`` exited with a non-zero code without raising in Python."""


#: what CuPy and torch say when a child forked after its parent initialised CUDA uses CUDA
_FORKED_CUDA = ("cudaErrorInitializationError", "Cannot re-initialize CUDA in forked subprocess")


def forked_cuda_hint(message: str) -> str:
    """``message``, plus the way out when it is CUDA failing in a forked child (CUDA does not survive fork)."""
    if not any(s in message for s in _FORKED_CUDA):
        return message
    return (
        f"{message}\n(a process forked after CUDA was initialised cannot use CUDA: start it with 'spawn', or keep "
        "its work on the CPU)"
    )


def _run(fn: Callable[..., Any], rank: int, args: tuple[Any, ...], errors: Any) -> None:
    try:
        fn(rank, *args)
    except BaseException:
        errors.put((rank, forked_cuda_hint(traceback.format_exc())))
        raise SystemExit(1) from None


def spawn(
    fn: Callable[..., Any], args: tuple[Any, ...] = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
    start_method: str = "spawn",
) -> list[Any] | None:  # fmt: skip
    """Run ``fn(rank, *args)`` for rank in ``range(nprocs)``, each in its own process.

    With ``join`` (default) wait for all of them. As soon as one fails, the others are stopped (a rank
    waiting in a collective for a dead peer would otherwise wait for the group's timeout) and
    ``ProcessRaisedException`` (with the child's traceback) or ``ProcessExitedException`` names the rank.
    Without ``join`` return the started processes. Each process may join a process group
    (``ember.distributed.init_process_group(rank=rank, world_size=nprocs, ...)``).
    """
    ctx: Any = _mp.get_context(start_method)
    errors = ctx.SimpleQueue()
    procs = [ctx.Process(target=_run, args=(fn, r, args, errors), daemon=daemon) for r in range(nprocs)]
    for p in procs:
        p.start()
    if not join:
        return procs
    failed = _wait_first_failure(procs)
    if failed is not None:
        _stop(procs)
    if not errors.empty():
        rank, tb = errors.get()
        raise ProcessRaisedException(f"process {rank} raised:\n{tb}")
    for r, p in enumerate(procs):
        if p.exitcode not in (0, None) and (failed is None or r == failed):
            raise ProcessExitedException(f"process {r} exited with {_exit_text(p.exitcode)}")
    return None


def _wait_first_failure(procs: list[Any]) -> int | None:
    """Wait until every process ended, or one ended with a failure (its rank is returned)."""
    from multiprocessing.connection import wait

    alive = {p.sentinel: r for r, p in enumerate(procs)}
    while alive:
        for s in wait(list(alive)):
            r = alive.pop(s)  # type: ignore[call-overload]
            procs[r].join()
            if procs[r].exitcode != 0:
                return r
    return None


def _stop(procs: list[Any], grace: float = 5.0) -> None:
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(grace)
        if p.is_alive():
            p.kill()
            p.join()


def _exit_text(code: int) -> str:
    if code < 0:
        import signal

        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"code {code}"
