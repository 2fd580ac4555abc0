"""DataLoader worker *processes* (``multiprocessing_context="fork"|"spawn"|"forkserver"``).

For datasets whose ``__getitem__`` holds the GIL (Python-heavy decoding), threads do not run in
parallel; processes do. Workers collate on the CPU whatever the default device (as PyTorch's: a worker
forked after the main process initialised CUDA cannot use it), so their batches are CPU tensors unless a
``collate_fn`` places them. Each worker gets batches of indices over its own pipe and sends back the
collated batch: the arrays go into one POSIX shared-memory block per batch and the structure (dicts,
lists, tuples, numbers, strings) as MessagePack, so the main process maps the arrays without a copy
and unpickles nothing. Only a batch that holds other objects (a custom ``collate_fn``'s class) falls
back to pickle, from the loader's own worker. A sample that raises is reported with its index and
the worker; a worker that dies is reported with its exit code.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection as mpc
import pickle
import random
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import numpy as np

from .._creation import from_numpy, manual_seed, randint
from .._device import device
from .._tensor import Tensor
from .._threads import set_num_threads
from ..multiprocessing import _shared, forked_cuda_hint
from .dataset import WorkerInfo, _worker_local

__all__ = ["ProcessPool", "fetch"]

_ALIGN = 64


def fetch(dataset: Any, collate_fn: Callable[[list[Any]], Any], use_get_batch: bool, indices: list[int]) -> Any:
    """One batch: ``dataset.get_batch(indices)`` when allowed and defined, else collated samples."""
    get_batch = getattr(dataset, "get_batch", None) if use_get_batch else None
    if get_batch is not None:
        try:
            return get_batch(indices)
        except AttributeError:
            pass
    samples = []
    for i in indices:
        try:
            samples.append(dataset[i])
        except Exception as e:
            raise RuntimeError(f"DataLoader: loading sample {i} raised {type(e).__name__}: {e}") from e
    return collate_fn(samples)


def stream_batches(it: Iterator[Any], batch_size: int | None, drop_last: bool, collate_fn: Any) -> Iterator[Any]:
    """Batches of an iterable dataset's stream (``batch_size=None``: one sample each, given to ``collate_fn``)."""
    size = batch_size or 1
    buf = []
    for x in it:
        buf.append(x)
        if len(buf) == size:
            yield collate_fn(buf)
            buf = []
    if buf and not drop_last:
        yield collate_fn(buf)


def _error(e: Exception) -> str:
    return forked_cuda_hint(str(e) if isinstance(e, RuntimeError) else f"{type(e).__name__}: {e}")


def _recv(conn: Any) -> bytes:
    """The next message from the main process; b"" (stop) when it is gone.

    A forked worker inherits the main process's ends of every pipe, so a dead main process does not
    close the pipe: the worker watches the main process itself.
    """
    parent = multiprocessing.parent_process()
    ready = mpc.wait([conn] + ([parent.sentinel] if parent is not None else []))
    if conn not in ready:
        return b""
    try:
        return bytes(conn.recv_bytes())
    except (EOFError, OSError):
        return b""


def _stream(dataset: Any, collate_fn: Any, conn: Any, params: list[Any]) -> bool:
    """Send this worker's share of an iterable dataset, ``prefetch`` batches ahead of the main process.

    Returns False when the main process asked the worker to stop.
    """
    batch_size, drop_last, credit = params
    msgpack = _msgpack()
    n = 0
    try:
        for b in stream_batches(iter(dataset), batch_size, drop_last, collate_fn):
            while credit == 0:  # wait until the main process has taken a batch
                raw = _recv(conn)
                if not raw:
                    return False
                credit += 1
            conn.send_bytes(_encode(n, b))
            n, credit = n + 1, credit - 1
        conn.send_bytes(msgpack.packb({"id": -1, "end": n}))
    except Exception as e:
        conn.send_bytes(msgpack.packb({"id": -1, "error": _error(e)}))
    return True


def _msgpack() -> Any:
    import msgpack

    return msgpack


class _UnencodableError(Exception):
    pass


def _contiguous(a: np.ndarray) -> np.ndarray:
    """``a`` in C order, keeping its shape (``np.ascontiguousarray`` makes a 0-d array 1-d)."""
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _encode(bid: int, batch: Any) -> bytes:
    """The batch as MessagePack, its arrays in one shared-memory block (pickle for other objects)."""
    arrays: list[np.ndarray] = []

    def walk(v: Any) -> Any:
        if isinstance(v, Tensor):
            arrays.append(_contiguous(v._backend.to_numpy(v.detach()._data)))
            return {"t": len(arrays) - 1, "dev": str(v.device), "dt": v.dtype.name}
        if isinstance(v, np.ndarray) and v.dtype.kind in "biuf":
            arrays.append(_contiguous(v))
            return {"a": len(arrays) - 1}
        if isinstance(v, dict) and all(isinstance(k, (str, int)) for k in v):
            return {"d": [[k, walk(x)] for k, x in v.items()]}
        if isinstance(v, list):
            return {"l": [walk(x) for x in v]}
        if type(v) is tuple:
            return {"u": [walk(x) for x in v]}
        if v is None or isinstance(v, (bool, int, float, str, bytes)):
            return v
        raise _UnencodableError

    msgpack = _msgpack()
    try:
        tree = walk(batch)
    except _UnencodableError:
        return msgpack.packb({"id": bid, "pickle": pickle.dumps(batch)})
    msg: dict[str, Any] = {"id": bid, "tree": tree}
    if arrays:
        offsets, total = [], 0
        for a in arrays:
            offsets.append(total)
            total += a.nbytes + (-a.nbytes % _ALIGN)
        name, base = _shared.create(total, owned=False)
        for a, off in zip(arrays, offsets, strict=True):
            base[off : off + a.nbytes] = a.reshape(-1).view(np.uint8)
        msg.update(shm=name, size=total, arrays=[[o, a.dtype.str, list(a.shape)] for a, o in zip(arrays, offsets)])
    return msgpack.packb(msg, use_bin_type=True)


def _decode(msg: dict[str, Any]) -> Any:
    if "pickle" in msg:
        return pickle.loads(msg["pickle"])  # from the loader's own worker process, never from a file
    arrays: list[np.ndarray] = []
    if "shm" in msg:
        base = _shared.open_block(msg["shm"], msg["size"])
        _shared.unlink(msg["shm"])  # mapped here now; the memory goes when the arrays do
        arrays = [np.ndarray(tuple(s), np.dtype(d), buffer=base, offset=o) for o, d, s in msg["arrays"]]

    def build(v: Any) -> Any:
        if isinstance(v, dict):
            if "t" in v:
                t = from_numpy(arrays[v["t"]])
                return t if v["dev"] == "cpu" else t.to(device=v["dev"])
            if "a" in v:
                return arrays[v["a"]]
            if "d" in v:
                return {k: build(x) for k, x in v["d"]}
            if "l" in v:
                return [build(x) for x in v["l"]]
            if "u" in v:
                return tuple(build(x) for x in v["u"])
        return v

    return build(msg["tree"])


def _worker_loop(
    dataset: Any, collate_fn: Any, use_get_batch: bool, conn: Any, wid: int, num_workers: int, seed: int,
    init_fn: Any,
) -> None:  # fmt: skip
    with device("cpu"):  # the default device here, also when the main process's is cuda (see the module doc)
        _serve(dataset, collate_fn, use_get_batch, conn, wid, num_workers, seed, init_fn)


def _serve(
    dataset: Any, collate_fn: Any, use_get_batch: bool, conn: Any, wid: int, num_workers: int, seed: int,
    init_fn: Any,
) -> None:  # fmt: skip
    _worker_local.info = WorkerInfo(wid, num_workers, seed)
    set_num_threads(1)  # as PyTorch's workers: num_workers processes must not each take every core
    manual_seed(seed)
    random.seed(seed)
    msgpack = _msgpack()
    if init_fn is not None:
        init_fn(wid)
    while True:
        raw = _recv(conn)
        if not raw:
            return
        if raw == b"+":  # a credit left over from a stream that ended
            continue
        bid, indices = msgpack.unpackb(raw)
        if bid < 0:  # an iterable dataset: stream this worker's share
            if not _stream(dataset, collate_fn, conn, indices):
                return
            continue
        try:
            out = _encode(bid, fetch(dataset, collate_fn, use_get_batch, indices))
        except Exception as e:
            out = msgpack.packb({"id": bid, "error": _error(e)})
        conn.send_bytes(out)


class ProcessPool:
    """``num_workers`` processes, each loading the batches it is sent, in order of request."""

    def __init__(self, loader: Any, context: Any) -> None:
        ctx: Any = multiprocessing.get_context(context) if isinstance(context, str) else context

        base_seed = int(randint(0, 2**31 - 1, (1,)).item())
        self.conns: list[Any] = []
        self.procs: list[Any] = []
        for wid in range(loader.num_workers):
            here, there = ctx.Pipe(duplex=True)
            args = (loader.dataset, loader.collate_fn, loader._default_collate, there, wid, loader.num_workers,
                    base_seed + wid, loader.worker_init_fn)  # fmt: skip
            p = ctx.Process(target=_worker_loop, args=args, daemon=True, name=f"ember-data-{wid}")
            p.start()
            there.close()
            self.conns.append(here)
            self.procs.append(p)
        self.limit = loader.num_workers * loader.prefetch_factor
        self.broken = False
        self.timeout = loader.timeout or None

    def run(self, batches: Iterator[list[int]]) -> Iterator[Any]:
        msgpack = _msgpack()
        n = len(self.conns)
        todo = enumerate(batches)
        waiting: dict[int, int] = {}  # batch id -> worker
        done: dict[int, Any] = {}

        def send() -> None:
            while len(waiting) + len(done) < self.limit:
                item = next(todo, None)
                if item is None:
                    return
                bid, idx = item
                self._send(bid % n, msgpack.packb([bid, [int(i) for i in idx]]))
                waiting[bid] = bid % n

        send()
        try:
            yield from self._collect(waiting, done, send)
        finally:  # stopped early: receive what is in flight so a persistent pool starts clean
            for bid, wid in list(waiting.items()):
                if not self.broken:
                    self._discard(self.conns[wid], 5.0)
                del waiting[bid]

    def _send(self, wid: int, raw: bytes) -> None:
        """Send to worker ``wid``; a worker that is gone (killed) is reported as such, not as a broken pipe."""
        try:
            self.conns[wid].send_bytes(raw)
        except OSError:  # BrokenPipeError, ConnectionResetError: the worker's end is closed
            self._died(wid)

    def _wait(self, waitables: list[Any]) -> list[Any]:
        ready: list[Any] = mpc.wait(waitables, self.timeout)
        if not ready:  # a worker is stuck: it is terminated, not waited for
            self.broken = True
            raise RuntimeError(
                f"DataLoader timed out after {self.timeout} seconds: no batch from the worker processes "
                f"{[p.pid for p in self.procs]} (timeout=...); a __getitem__ may be stuck"
            )
        return ready

    def _collect(self, waiting: dict[int, int], done: dict[int, Any], send: Callable[[], None]) -> Iterator[Any]:
        msgpack = _msgpack()
        nxt = 0
        while waiting or done:
            if nxt in done:
                out = done.pop(nxt)
                nxt += 1
                send()
                yield out
                continue
            ready = self._wait(self.conns + [p.sentinel for p in self.procs])
            for r in ready:
                if r in self.conns and r.poll():
                    try:
                        raw = r.recv_bytes()
                    except (EOFError, OSError):  # the worker is gone
                        self._died(self.conns.index(r))
                    msg = msgpack.unpackb(raw, raw=False)
                    wid = waiting.pop(msg["id"])
                    if "error" in msg:
                        raise RuntimeError(f"DataLoader worker {wid} (process {self.procs[wid].pid}): {msg['error']}")
                    done[msg["id"]] = _decode(msg)
            for wid, p in enumerate(self.procs):
                if p.exitcode is not None and wid in waiting.values() and not self.conns[wid].poll():
                    self._died(wid)

    def stream(self, batch_size: int | None, drop_last: bool) -> Iterator[Any]:
        """An iterable dataset's batches as the workers produce them (each worker iterates its own share)."""
        msgpack = _msgpack()
        for wid in range(len(self.conns)):
            self._send(wid, msgpack.packb([-1, [batch_size, drop_last, self.limit // len(self.conns)]]))
        live = set(range(len(self.conns)))
        try:
            while live:
                waitables = [self.conns[w] for w in live] + [self.procs[w].sentinel for w in live]
                ready = self._wait(waitables)
                for r in ready:
                    if r not in self.conns:
                        wid = [p.sentinel for p in self.procs].index(r)
                        if wid in live and not self.conns[wid].poll():
                            self._died(wid)
                        continue
                    wid = self.conns.index(r)
                    try:
                        msg = msgpack.unpackb(r.recv_bytes(), raw=False)
                    except (EOFError, OSError):
                        self._died(wid)
                    if "error" in msg:
                        raise RuntimeError(f"DataLoader worker {wid} (process {self.procs[wid].pid}): {msg['error']}")
                    if "end" in msg:
                        live.discard(wid)
                        continue
                    batch = _decode(msg)
                    self._send(wid, b"+")
                    yield batch
        finally:
            if live:  # stopped mid-stream: these workers cannot be reused
                self.broken = True

    def _died(self, wid: int) -> NoReturn:
        self.broken = True
        p = self.procs[wid]
        p.join(timeout=5)
        code = p.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"with code {code}"
        raise RuntimeError(f"DataLoader worker {wid} (process {p.pid}) exited unexpectedly {how}")

    def _discard(self, conn: Any, wait: float) -> bool:
        """Receive one batch nobody will read and free its shared memory; False when none came."""
        with contextlib.suppress(OSError, EOFError):
            if conn.poll(wait):
                msg = _msgpack().unpackb(conn.recv_bytes(), raw=False)
                if "shm" in msg:
                    _shared.unlink(msg["shm"])
                return True
        return False

    def close(self) -> None:
        if self.broken:  # a stuck or dead worker: stop them all now rather than wait for them
            for p in self.procs:
                if p.is_alive():
                    p.terminate()
        for c in self.conns:
            with contextlib.suppress(OSError):
                c.send_bytes(b"")
        for c, p in zip(self.conns, self.procs, strict=True):
            while p.is_alive() and self._discard(c, 0.05):  # a worker may be blocked sending a batch
                pass
            p.join(timeout=2)
            if p.is_alive():
                p.terminate()
                p.join()
            while self._discard(c, 0.0):
                pass
            c.close()
        self.conns, self.procs = [], []
