"""Shared memory, Hogwild training across processes, and DataLoader worker processes."""

import contextlib
import os
import pickle

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp
from ember.data import DataLoader, Dataset, TensorDataset, get_worker_info

pytestmark = pytest.mark.skipif(os.name != "posix" or not hasattr(os, "fork"), reason="needs fork")


def _shm_names(*pids):
    """Shared-memory blocks made by these processes (other test workers make their own concurrently)."""
    names = os.listdir("/dev/shm") if os.path.isdir("/dev/shm") else []
    return {n for n in names if any(n.startswith(f"ember_{pid}_") for pid in pids)}


def _host():
    """The CPU as default device where the process default is not (make test-cuda): Ember shares CPU memory only,
    and a child forked after the parent initialised CUDA cannot use CUDA (it may still work on the CPU)."""
    return contextlib.nullcontext() if ember.get_default_device().type == "cpu" else ember.device("cpu")


def test_share_memory_and_pickle_attach_to_the_same_memory():
    with _host():
        t = ember.arange(6.0).reshape(2, 3)
        assert not t.is_shared()
        assert t.share_memory_() is t and t.is_shared() and t.tolist() == [[0, 1, 2], [3, 4, 5]]
        u = pickle.loads(pickle.dumps(t))  # what a spawned process receives
        v = pickle.loads(pickle.dumps(t[:, 1]))  # a view: offset and strides travel
        u[0, 0] = 10.0
        assert t[0, 0].item() == 10.0 and v.tolist() == [1.0, 4.0]
        t[1, 1] = -1.0
        assert v.tolist() == [1.0, -1.0]
        m = ember.nn.Linear(3, 2).share_memory()
        m2 = pickle.loads(pickle.dumps(m))
        assert all(p.is_shared() for p in m2.parameters()) and m2.weight.id == m.weight.id
        with ember.no_grad():
            m2.bias.fill_(7.0)
        assert m.bias.tolist() == [7.0, 7.0]
        plain = pickle.loads(pickle.dumps(ember.ones(2)))
        assert not plain.is_shared()


def _hogwild(model, steps):
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        loss = model(ember.ones(4, 2, device=model.weight.device)).sum()  # (the default device may be cuda)
        opt.zero_grad()
        loss.backward()
        opt.step()


def test_hogwild_fork_processes_update_one_model():
    with _host():
        model = ember.nn.Linear(2, 1)
    with ember.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    model.share_memory()
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_hogwild, args=(model, 5)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0, 0]
    # every step subtracts 0.1 * 4 from each parameter (the gradient does not depend on them)
    np.testing.assert_allclose(model.bias.item(), -4.0, rtol=1e-6)
    np.testing.assert_allclose(model.weight.detach().numpy(), [[-4.0, -4.0]], rtol=1e-6)
    del model, p, procs
    import gc

    gc.collect()
    assert not _shm_names(os.getpid())  # the blocks were released


def _fail(rank):
    if rank == 1:
        raise ValueError("rank one fails")


def test_spawn_reports_a_child_exception():
    mp.spawn(lambda r: None, nprocs=2, start_method="fork")
    with pytest.raises(mp.ProcessRaisedException, match="rank one fails"):
        mp.spawn(_fail, nprocs=2, start_method="fork")


def _cuda_after_fork(rank):
    raise RuntimeError("cudaErrorInitializationError: initialization error")  # CuPy's words in a forked child


def test_cuda_failing_in_a_forked_child_names_the_way_out():
    with pytest.raises(mp.ProcessRaisedException, match=r"(?s)initialization error.*start it with 'spawn'"):
        mp.spawn(_cuda_after_fork, nprocs=1, start_method="fork")
    with pytest.raises(mp.ProcessRaisedException) as e:
        mp.spawn(_fail, nprocs=2, start_method="fork")
    assert "spawn" not in str(e.value)  # other errors as they were


class _PyDataset(Dataset):
    """A dataset whose __getitem__ is Python work (holds the GIL) and returns mixed structures."""

    def __len__(self):
        return 21

    def __getitem__(self, i):
        if i == 13 and getattr(self, "fail", False):
            raise KeyError("no such record")
        if i == 5 and getattr(self, "die", False):
            os._exit(3)
        info = get_worker_info()
        return {"x": np.full((2, 2), i, np.float32), "y": i, "tag": f"s{i}",
                "pair": (ember.tensor([i, -i]), float(i)), "wid": -1 if info is None else info.id}  # fmt: skip


def _strip(batch):
    return {k: v for k, v in batch.items() if k != "wid"}


def _as_lists(b):
    x, (pt, pf) = b["x"], b["pair"]
    return [x.tolist(), b["y"].tolist(), b["tag"], pt.tolist(), pf.tolist(), str(x.dtype), str(pt.dtype)]


def test_process_workers_give_the_same_batches_as_the_main_process():
    ds = _PyDataset()
    ref = [_as_lists(b) for b in DataLoader(ds, batch_size=4)]
    dl = DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context="fork", persistent_workers=True)
    got = list(dl)
    pids = [p.pid for p in dl._procs.procs]
    dl.persistent_workers = False
    dl._close()
    assert [_as_lists(b) for b in got] == ref
    assert {w for b in got for w in b["wid"].tolist()} == {0, 1}  # both workers, each knowing its id
    assert isinstance(got[0]["x"], ember.Tensor) and isinstance(got[0]["pair"], list)  # (PyTorch: a list)
    del got
    assert not _shm_names(*pids)  # every batch's block was unlinked once mapped


def test_process_workers_persistent_early_stop_and_custom_collate():
    ds = _PyDataset()
    dl = DataLoader(ds, batch_size=2, num_workers=2, multiprocessing_context="fork", persistent_workers=True,
                    shuffle=True, seed=1)  # fmt: skip
    for _ in zip(range(2), dl):  # stop early: batches in flight are drained
        pass
    first = [b["y"].tolist() for b in dl]
    assert sorted(y for b in first for y in b) == list(range(21))
    dl._close()
    dl.persistent_workers = False
    dl._close()
    out = list(DataLoader(ds, batch_size=5, num_workers=1, multiprocessing_context="fork",
                          collate_fn=lambda s: {len(s)}))  # fmt: skip
    assert out == [{5}, {5}, {5}, {5}, {1}]  # other objects come back too (pickled by the worker)


def test_process_worker_errors_name_the_sample_and_the_worker():
    ds = _PyDataset()
    ds.fail = True
    with pytest.raises(RuntimeError, match=r"worker \d \(process \d+\).*sample 13 raised KeyError"):
        list(DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context="fork"))
    ds = _PyDataset()
    ds.die = True
    with pytest.raises(RuntimeError, match="exited unexpectedly with code 3"):
        list(DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context="fork"))


class _Stream(ember.data.IterableDataset):
    """Each worker reads its own share of the records (as PyTorch programs shard by get_worker_info)."""

    def __init__(self, n, fail_at=None):
        self.n, self.fail_at = n, fail_at

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(wid, self.n, nw):
            if i == self.fail_at:
                raise ValueError(f"bad record {i}")
            yield np.array([i, wid], np.int64)


def test_process_workers_stream_an_iterable_dataset():
    dl = DataLoader(_Stream(23), batch_size=4, num_workers=2, multiprocessing_context="fork", persistent_workers=True)
    got = [b.tolist() for b in dl]
    rows = [r for b in got for r in b]
    assert sorted(r[0] for r in rows) == list(range(23)) and {r[1] for r in rows} == {0, 1}
    assert len(got) == 6  # each worker batches its own share: 12 rows -> 3 batches, 11 -> 3 (one short)
    for _ in zip(range(2), dl):  # stopping mid-stream retires those workers; the next epoch starts fresh ones
        pass
    assert len(list(dl)) == 6
    dl.persistent_workers = False
    dl._close()
    singles = list(DataLoader(_Stream(5), batch_size=None, num_workers=2, multiprocessing_context="fork"))
    assert sorted(x.tolist()[0] for x in singles) == [0, 1, 2, 3, 4]
    with pytest.raises(RuntimeError, match=r"worker 1 \(process \d+\): ValueError: bad record 7"):
        list(DataLoader(_Stream(23, fail_at=7), batch_size=4, num_workers=2, multiprocessing_context="fork"))


def test_spawn_workers_with_a_picklable_dataset():
    ds = TensorDataset(ember.arange(12.0).reshape(6, 2), ember.arange(6))
    got = list(DataLoader(ds, batch_size=4, num_workers=1, multiprocessing_context="spawn"))
    assert [b[1].tolist() for b in got] == [[0, 1, 2, 3], [4, 5]]
    assert got[1][0].tolist() == [[8.0, 9.0], [10.0, 11.0]]


def _double(q_in, q_out):
    t = q_in.get()
    t.mul_(2.0)  # shared: the parent sees it
    q_out.put((t * 1.0, ember.tensor([1, 2], device=t.device)))  # not shared: sent by value


def test_tensors_through_queues():
    ctx = mp.get_context("fork")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    with _host():
        shared = ember.ones(3).share_memory_()
    p = ctx.Process(target=_double, args=(q_in, q_out))
    p.start()
    q_in.put(shared)
    value, ints = q_out.get(timeout=30)
    p.join()
    assert shared.tolist() == [2.0, 2.0, 2.0] and value.tolist() == [2.0, 2.0, 2.0]
    assert ints.dtype == ember.int64 and not value.is_shared()


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA device")
def test_a_cuda_tensor_is_refused_by_share_memory_and_is_not_shared():
    t = ember.ones(2, device="cuda")
    assert not t.is_shared()  # PyTorch's True means CUDA IPC; Ember pickles a CUDA tensor's values (a copy)
    with pytest.raises(RuntimeError, match=r"cannot be shared between processes.*keep the shared tensor"):
        t.share_memory_()
    with pytest.raises(RuntimeError, match="cannot be shared between processes"):
        ember.nn.Linear(2, 1).to("cuda").share_memory()


def _make_cupy_backend_in_a_forked_child(dev):
    try:
        ember.backends.get("cupy", dev)
    except ember.backends.DeviceError as e:
        os._exit(0 if "forked" in str(e) and "'spawn'" in str(e) else 2)
    os._exit(3)  # the parent's backend object was handed out: its CUDA calls would fail cryptically


def test_a_child_forked_after_cupy_initialised_cuda_is_told_to_spawn(monkeypatch):
    """A CuPy backend the parent made is not handed to a forked child (CUDA does not survive fork): the child gets
    a DeviceError naming 'spawn'. Simulated without a GPU: the parent's CuPy marked as having initialised CUDA,
    its backend object a stand-in."""
    from ember.backends import cupy_backend

    key = ("cupy", ember.device("cuda:7"))
    parent_backend = object()
    monkeypatch.setitem(ember.backends._CACHE, key, parent_backend)
    monkeypatch.setattr(cupy_backend, "_CUDA_STATE", [True, False])
    p = mp.get_context("fork").Process(target=_make_cupy_backend_in_a_forked_child, args=(key[1],))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert ember.backends._CACHE[key] is parent_backend and not cupy_backend._CUDA_STATE[1]  # the parent's kept
