"""DataLoader failure modes (issue 29): ``timeout`` for every kind of worker, killed workers, bad options.

Each test runs the same code under Ember and PyTorch where PyTorch has the behaviour.
"""

import os
import signal
import threading
import time

import numpy as np
import pytest

import ember

fork_only = pytest.mark.skipif(os.name != "posix" or not hasattr(os, "fork"), reason="needs fork")


class _Stuck:
    """``__getitem__`` of index 1 never returns (until ``release`` is set: threads cannot be killed)."""

    def __init__(self):
        self.release = threading.Event()

    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 1:
            self.release.wait(60) if threading.current_thread() is not threading.main_thread() else time.sleep(60)
        return np.float32(i)


class _StuckStream(ember.data.IterableDataset):
    def __init__(self):
        self.release = threading.Event()

    def __iter__(self):
        yield np.float32(0)
        self.release.wait(60)


def _loader(lib, ds, **kw):
    return (lib.utils.data if lib is not ember else ember.data).DataLoader(ds, **kw)


def _raises_within(seconds, fn):
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"timed out after 0\.5 seconds"):
        fn()
    took = time.perf_counter() - start
    assert took < seconds, f"took {took:.1f} s"


@pytest.mark.parametrize("kind", ["threads", "threads_stream", pytest.param("fork", marks=fork_only),
                                  pytest.param("fork_stream", marks=fork_only)])  # fmt: skip
def test_timeout_holds_for_every_kind_of_worker(kind):
    """PyTorch (process workers) raises "DataLoader timed out after 0.5 seconds"; not run here: its shutdown
    then waits 5 s for the stuck worker."""
    ds = _StuckStream() if kind.endswith("stream") else _Stuck()
    kw = {"multiprocessing_context": "fork"} if kind.startswith("fork") else {}
    try:
        _raises_within(8.0, lambda: list(_loader(ember, ds, num_workers=2, timeout=0.5, **kw)))
    finally:
        ds.release.set()


def test_thread_workers_are_daemons_so_a_stuck_one_cannot_block_exit():
    ds = _Stuck()
    try:
        with pytest.raises(RuntimeError):
            list(_loader(ember, ds, num_workers=2, timeout=0.2))
        stuck = [t for t in threading.enumerate() if t.name.startswith("ember-data")]
        assert stuck and all(t.daemon for t in stuck)
    finally:
        ds.release.set()


@fork_only
def test_a_killed_worker_is_named_not_a_broken_pipe():
    ds = ember.data.TensorDataset(ember.arange(12.0, device="cpu"))  # forked workers cannot touch CUDA tensors
    dl = _loader(ember, ds, batch_size=2, num_workers=2, multiprocessing_context="fork", persistent_workers=True)
    assert len(list(dl)) == 6
    victim = dl._procs.procs[0]
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(5)
    with pytest.raises(RuntimeError, match=r"worker 0 \(process \d+\) exited unexpectedly killed by signal 9"):
        list(dl)
    assert len(list(dl)) == 6  # the broken pool was replaced
    dl.persistent_workers = False
    dl._close()


@pytest.mark.parametrize("lib_name", ["ember", "torch"])
def test_prefetch_factor_is_checked(lib_name, request):
    lib = ember if lib_name == "ember" else request.getfixturevalue("torch")
    ds = list(range(4))
    with pytest.raises(ValueError, match="prefetch_factor"):
        list(_loader(lib, ds, num_workers=0, prefetch_factor=2))
    if lib is ember:  # PyTorch fails an assertion when iterating (and again in the iterator's __del__)
        with pytest.raises(ValueError, match="prefetch_factor"):
            list(_loader(lib, ds, num_workers=1, prefetch_factor=0))
    with pytest.raises(ValueError, match="prefetch_factor"):
        list(_loader(lib, ds, num_workers=1, prefetch_factor=-1))
    if lib is ember:  # (PyTorch's worker processes take seconds to start)
        assert [int(b) for b in _loader(lib, ds, num_workers=1, prefetch_factor=1)] == ds
    assert _loader(lib, ds, num_workers=2).prefetch_factor == 2
    assert _loader(lib, ds).prefetch_factor is None


def test_negative_timeout_is_refused():
    with pytest.raises(ValueError, match="timeout"):
        _loader(ember, [1], num_workers=1, timeout=-1)


@fork_only
def test_process_workers_keep_zero_dim_arrays_zero_dim():
    """(NumPy's ascontiguousarray makes a 0-d array 1-d: batches came back with shape (1,).)"""
    dl = _loader(ember, list(range(4)), batch_size=2, num_workers=1, multiprocessing_context="fork",
                 collate_fn=lambda s: (ember.tensor(float(sum(s))), np.array(sum(s)), np.arange(3.0)[::2]))  # fmt: skip
    assert [(tuple(t.shape), a.shape, v.tolist()) for t, a, v in dl] == [((), (), [0.0, 2.0])] * 2


class _CudaAfterFork:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        raise RuntimeError("Cannot re-initialize CUDA in forked subprocess.")  # torch's words in a forked worker


@fork_only
def test_a_forked_worker_that_cannot_use_cuda_says_what_to_do():
    """(Workers collate on the CPU, so this takes a dataset that uses CUDA itself.)"""
    dl = _loader(ember, _CudaAfterFork(), num_workers=1, multiprocessing_context="fork")
    with pytest.raises(RuntimeError, match=r"(?s)loading sample 0 .*re-initialize CUDA.*start it with 'spawn'"):
        list(dl)
