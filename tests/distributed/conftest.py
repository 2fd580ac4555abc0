"""Real process groups for the distributed tests: ``run_group(fn)`` runs ``fn(rank, world, *args)`` on 2 ranks.

The ranks are forked from the test process (torch and Ember are already imported there, so a group starts in
well under a second; spawning would import both again per rank), join a gloo group on a free localhost port,
and send back ``fn``'s result or traceback. Each test module starts one group and checks several things in it.
Run this suite alone with ``pytest tests/distributed -m distributed``; it is part of ``make test``.

The ranks work on the CPU, also when the suite runs with the default device cuda (``make test-cuda``): these
tests are about gloo groups of several ranks, and a GPU machine with one GPU cannot give each rank its own
(NCCL refuses two ranks on one GPU; gloo takes CUDA tensors only for broadcast and all_reduce). Forking is
safe then because the ranks never touch CUDA (CUDA cannot be used in a child forked after the parent
initialised it: ``cudaErrorInitializationError``). ``tests/distributed/test_cuda.py`` covers CUDA tensors:
NCCL with one rank, and two spawned ranks sharing the GPU through gloo.
"""

from __future__ import annotations

import multiprocessing
import socket
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import pytest


def free_port() -> int:
    """A localhost port nobody listens on now (bind to port 0; parallel test workers never collide)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def on_the_cpu() -> None:
    """Make the CPU this forked rank's default device (it inherits cuda under ``make test-cuda``; see above)."""
    import ember

    ember.set_default_device("cpu")


def _child(
    fn: Callable[..., Any],
    rank: int,
    world: int,
    port: int,
    conn: Any,
    args: tuple[Any, ...],
    init: bool,
    timeout: float,
) -> None:
    torch = sys.modules.get("torch")
    if torch is not None:  # before any torch kernel: OpenMP's pool does not survive fork
        torch.set_num_threads(1)
    try:
        import ember
        import ember.distributed as dist

        ember.set_num_threads(1)
        on_the_cpu()
        if init:
            dist.init_process_group(
                "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=timeout
            )
        result = fn(rank, world, *args)
        if init and dist.is_initialized():
            dist.destroy_process_group()
        conn.send(("ok", result))
    except BaseException:
        conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


def run_group(
    fn: Callable[..., Any],
    *args: Any,
    world: int = 2,
    init: bool = True,
    timeout: float = 60.0,
    collective_timeout: float = 30.0,
    check: bool = True,
    wait_for: Any = None,
    start_method: str = "fork",
) -> list[Any]:
    """Run ``fn(rank, world, *args)`` in ``world`` forked processes in one gloo group; return their results.

    ``start_method="spawn"`` starts fresh interpreters instead (``fn`` must then be importable by name): for
    PyTorch's own autograd in the ranks on a machine where torch sees a GPU, which refuses to run in a child
    forked after the parent ran a backward pass ("Unable to handle autograd's threading in combination with
    fork-based multiprocessing").

    Fails with every failing rank's traceback; kills the ranks still running after ``timeout`` seconds.
    With ``check=False`` return ``(status, value)`` per rank instead: ``("ok", result)``, ``("error",
    traceback)``, ``("exit", exit code)`` or ``("timeout", None)``; ``wait_for`` (ranks) stops waiting for the
    others once those answered (they are killed).
    """
    pytest.importorskip("torch")
    import torch.distributed  # noqa: F401 - imported once here, not in every rank

    import ember.distributed  # noqa: F401

    ctx = multiprocessing.get_context(start_method)
    port = free_port()
    pipes, procs = [], []
    for rank in range(world):
        recv, send = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_child, args=(fn, rank, world, port, send, args, init, collective_timeout))
        p.start()
        send.close()
        pipes.append(recv)
        procs.append(p)
    results: list[Any] = [None] * world
    errors = []
    deadline = time.monotonic() + timeout
    try:
        for rank, (conn, p) in enumerate(zip(pipes, procs, strict=True)):
            if wait_for is not None and rank not in wait_for:
                results[rank] = ("timeout", None)
                continue
            left = deadline - time.monotonic()
            if not conn.poll(max(left, 0.0)):
                results[rank] = ("timeout", None)
                errors.append(f"rank {rank}: no answer within {timeout:.0f} s")
                continue
            try:
                status, value = conn.recv()
            except EOFError:
                p.join(5)
                results[rank] = ("exit", p.exitcode)
                errors.append(f"rank {rank}: exited with code {p.exitcode} without an answer")
                continue
            results[rank] = (status, value)
            if status != "ok":
                errors.append(f"rank {rank} raised:\n{value}")
    finally:
        for rank, p in enumerate(procs):
            if results[rank] == ("timeout", None) and wait_for is not None and p.is_alive():
                p.kill()
            p.join(max(deadline - time.monotonic(), 0.1))
            if p.is_alive():
                p.kill()
                p.join()
    if not check:
        return results
    if errors:
        pytest.fail("\n".join(errors), pytrace=False)
    return [value for _, value in results]
