"""Datasets, samplers, the DataLoader, transforms and the IDX reader."""

import gzip
import struct
import threading
import time

import numpy as np
import pytest

import ember
from ember.data import (
    MNIST,
    ConcatDataset,
    CSVDataset,
    DataLoader,
    DistributedSampler,
    InMemoryDataset,
    IterableDataset,
    MapDataset,
    NpzDataset,
    RandomSampler,
    ShuffledDataset,
    Subset,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    get_worker_info,
    random_split,
    read_idx,
    transforms,
)


class Squares:
    def __len__(self):
        return 23

    def __getitem__(self, i):
        if not 0 <= i < 23:
            raise IndexError(i)
        return np.array([i, i * i], dtype=np.float32), i


def _ids(loader):
    return [int(v) for _, y in loader for v in y.tolist()]


@pytest.mark.parametrize("workers", [0, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_every_sample_once_per_epoch(workers, shuffle):
    dl = DataLoader(Squares(), batch_size=4, shuffle=shuffle, num_workers=workers, seed=1)
    for _ in range(2):
        ids = _ids(dl)
        assert sorted(ids) == list(range(23))
    assert len(dl) == 6
    if not shuffle:
        assert ids == list(range(23))


def test_seeded_order_and_drop_last():
    a = _ids(DataLoader(Squares(), 5, shuffle=True, seed=7))
    b = _ids(DataLoader(Squares(), 5, shuffle=True, seed=7))
    c = _ids(DataLoader(Squares(), 5, shuffle=True, seed=8))
    assert a == b and a != c
    dl = DataLoader(Squares(), 5, drop_last=True)
    assert len(dl) == 4 and len(_ids(dl)) == 20
    g = ember.Generator().manual_seed(3)
    assert _ids(DataLoader(Squares(), 5, shuffle=True, generator=g)) != a


def test_tensor_dataset_batches_in_one_call():
    x, y = np.arange(20.0).reshape(10, 2), np.arange(10)
    dl = DataLoader(TensorDataset(x, y), batch_size=4)
    xb, yb = next(iter(dl))
    assert isinstance(xb, ember.Tensor) and xb.shape == (4, 2) and yb.tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="tensor 1 has 9 rows, tensor 0 has 10"):
        TensorDataset(x, y[:9])


def test_collate_nested_structures_and_shape_errors():
    batch = [({"img": np.zeros((2, 2)), "name": "a"}, [1, 2.5]), ({"img": np.ones((2, 2)), "name": "b"}, [3, 4.5])]
    out = default_collate(batch)
    assert out[0]["img"].shape == (2, 2, 2) and out[0]["name"] == ["a", "b"]
    assert out[1][0].dtype == ember.int64 and out[1][1].dtype == ember.float64  # Python floats: PyTorch's float64
    with pytest.raises(ValueError, match=r"sample 1 has shape \(3,\) but sample 0 has \(2,\)"):
        default_collate([np.zeros(2), np.zeros(3)])


def test_worker_error_names_the_sample():
    class Bad(Squares):
        def __getitem__(self, i):
            if i == 13:
                raise KeyError("broken record")
            return super().__getitem__(i)

    for workers in (0, 2):
        with pytest.raises(RuntimeError, match="loading sample 13 raised KeyError"):
            list(DataLoader(Bad(), 4, num_workers=workers))


def test_workers_run_in_parallel_threads():
    seen = set()

    class Slow(Squares):
        def __getitem__(self, i):
            seen.add(threading.current_thread().name)
            time.sleep(0.01)  # long enough that every worker gets a batch
            return super().__getitem__(i)

    list(DataLoader(Slow(), 2, num_workers=3))
    assert len({n for n in seen if n.startswith("ember-data")}) >= 2


def test_iterable_dataset_sharded_across_workers_without_duplicates():
    class Stream(IterableDataset):
        def __iter__(self):
            return self.shard(iter(range(50)))

    for workers in (0, 1, 4):
        got = [v for b in DataLoader(Stream(), batch_size=6, num_workers=workers) for v in b.tolist()]
        assert sorted(got) == list(range(50)), workers
    assert get_worker_info() is None


def test_samplers():
    assert sorted(RandomSampler(range(10), seed=0)) == list(range(10))
    assert len(list(RandomSampler(range(10), replacement=True, num_samples=25, seed=0))) == 25
    w = WeightedRandomSampler([0.0, 0.0, 1.0], 10, generator=np.random.default_rng(0))
    assert list(w) == [2] * 10
    parts = [list(DistributedSampler(range(10), num_replicas=3, rank=r, seed=1)) for r in range(3)]
    assert all(len(p) == 4 for p in parts) and set().union(*parts) == set(range(10))
    parts = [list(DistributedSampler(range(10), num_replicas=3, rank=r, drop_last=True)) for r in range(3)]
    flat = [i for p in parts for i in p]
    assert len(flat) == len(set(flat)) == 9


def test_dataset_combinators():
    base = InMemoryDataset(list(range(10)))
    a, b = random_split(base, [0.7, 0.3], seed=0)
    assert len(a) == 7 and len(b) == 3 and sorted(list(a) + list(b)) == list(range(10))
    assert [a[i] for i in range(7)] == [random_split(base, [7, 3], seed=0)[0][i] for i in range(7)]
    with pytest.raises(ValueError, match="do not add up"):
        random_split(base, [3, 3])
    assert len(ConcatDataset([base, base])) == 20 and (base + base)[15] == 5
    assert MapDataset(base, lambda v: v * 2)[4] == 8
    assert sorted(ShuffledDataset(base, 1)[i] for i in range(10)) == list(range(10))
    with pytest.raises(IndexError, match="out of range"):
        Subset(base, [0, 12])


def test_transforms():
    img = (np.arange(48).reshape(4, 4, 3) * 5).astype(np.uint8)
    t = transforms.ToTensor()(img)
    assert t.shape == (3, 4, 4) and abs(t.numpy().max() - 235 / 255) < 1e-6
    n = transforms.Normalize([0.5] * 3, [0.5] * 3)(t)
    np.testing.assert_allclose(n.numpy(), (t.numpy() - 0.5) / 0.5, rtol=1e-6)
    c = transforms.Compose([transforms.RandomCrop(3, padding=1, generator=np.random.default_rng(0)),
                            transforms.RandomHorizontalFlip(1.0)])(t)  # fmt: skip
    assert c.shape == (3, 3, 3)
    r = transforms.Resize((8, 6))(t)
    assert r.shape == (3, 8, 6)
    f = transforms.RandomHorizontalFlip(1.0)(np.array([[1, 2, 3]]))
    assert f.tolist() == [[3, 2, 1]]


def _write_idx(path, arr, gz=False):
    code = {np.uint8: 0x08}[arr.dtype.type]
    data = bytes([0, 0, code, arr.ndim]) + struct.pack(">" + "I" * arr.ndim, *arr.shape) + arr.tobytes()
    path.write_bytes(gzip.compress(data) if gz else data)


def test_mnist_from_small_idx_files(tmp_path):
    rng = np.random.default_rng(0)
    _write_idx(tmp_path / "train-images-idx3-ubyte.gz", rng.integers(0, 256, (12, 28, 28)).astype(np.uint8), True)
    _write_idx(tmp_path / "train-labels-idx1-ubyte", rng.integers(0, 10, 12).astype(np.uint8))
    ds = MNIST(tmp_path, train=True)
    x, y = ds[3]
    assert len(ds) == 12 and x.shape == (1, 28, 28) and 0 <= x.max() <= 1 and y.dtype == ember.int64
    xb, _ = next(iter(DataLoader(ds, 5)))
    assert xb.shape == (5, 1, 28, 28)
    with pytest.raises(FileNotFoundError, match=r"t10k-images-idx3-ubyte\[\.gz\] is missing.*Place the IDX files"):
        MNIST(tmp_path, train=False)
    (tmp_path / "bad").write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x05abc")
    with pytest.raises(ValueError, match="expected 5 data bytes for shape"):
        read_idx(tmp_path / "bad")


def test_csv_and_npz(tmp_path):
    (tmp_path / "d.csv").write_text("a,b,label\n1,2,0\n3,4,1\n")
    ds = CSVDataset(tmp_path / "d.csv", target="label")
    assert len(ds) == 2 and ds[1][0].tolist() == [3.0, 4.0] and ds[1][1] == 1
    np.savez(tmp_path / "d.npz", x=np.zeros((3, 2)), y=np.arange(3))
    ds = NpzDataset(tmp_path / "d.npz", ("x", "y"))
    assert len(ds) == 3
    with pytest.raises(KeyError, match=r"no arrays named \['z'\]"):
        NpzDataset(tmp_path / "d.npz", ("z",))


def test_pin_memory_without_accelerator_warns_and_passes_batches_through():
    ds = TensorDataset(ember.arange(12.0).reshape(6, 2), ember.arange(6))
    if ember.accelerator.is_available():
        pytest.skip("an accelerator is here: batches are pinned (test_pin_memory_pins_every_tensor)")
    with pytest.warns(UserWarning, match="pin_memory=True but no accelerator"):
        loader = DataLoader(ds, batch_size=4, pin_memory=True)
    plain = [b for b in DataLoader(ds, batch_size=4)]
    got = list(loader)
    assert len(got) == 2
    for (x, y), (px, py) in zip(got, plain, strict=True):
        assert x.tolist() == px.tolist() and y.tolist() == py.tolist()
        assert not x.is_pinned()


def test_pin_memory_pins_every_tensor_of_a_batch(monkeypatch):
    """Every tensor of a nested batch goes through Tensor.pin_memory (pinned on a CUDA machine)."""
    import ember.data.dataloader as dl

    pinned = []
    real = ember.Tensor.pin_memory

    def pin(self):
        pinned.append(self.shape)
        return real(self)

    monkeypatch.setattr(dl, "_can_pin", lambda: True)
    monkeypatch.setattr(ember.Tensor, "pin_memory", pin)

    def collate(samples):
        xs, ys = default_collate([s[0] for s in samples]), default_collate([s[1] for s in samples])
        return {"x": xs, "pair": (ys, "tag")}

    ds = TensorDataset(ember.ones(5, 3, device="cpu"), ember.arange(5, device="cpu"))  # data on the host, as usual
    for workers in (0, 2):
        pinned.clear()
        batches = list(DataLoader(ds, batch_size=2, pin_memory=True, collate_fn=collate, num_workers=workers))
        assert [b["x"].shape for b in batches] == [(2, 3), (2, 3), (1, 3)]
        assert batches[0]["pair"][1] == "tag"
        assert sorted(pinned) == sorted([(2, 3), (2,), (2, 3), (2,), (1, 3), (1,)])
        if ember.accelerator.is_available():
            assert all(b["x"].is_pinned() and b["pair"][0].is_pinned() for b in batches)


def test_random_sampler_draws_lazily_and_checks_num_samples():
    import itertools
    import tracemalloc

    from ember.data import RandomSampler

    tracemalloc.start()
    s = RandomSampler(range(10), replacement=True, num_samples=10**10)  # every index up front would be 80 GB
    first = list(itertools.islice(iter(s), 1000))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(s) == 10**10 and len(first) == 1000 and all(0 <= i < 10 for i in first) and peak < 50 * 2**20
    no_repl = list(RandomSampler(range(5), num_samples=12, seed=1))
    assert len(no_repl) == 12 and sorted(no_repl[:5]) == [0, 1, 2, 3, 4] and sorted(no_repl[5:10]) == [0, 1, 2, 3, 4]
    for bad in (0, -3, 2.5):
        with pytest.raises(ValueError, match="num_samples should be a positive integer"):
            RandomSampler(range(5), num_samples=bad)


class _Threads:
    """Each sample: the worker's thread settings (Ember's, and the NumPy kernels' pool size)."""

    def __len__(self):
        return 2

    def __getitem__(self, i):
        from ember.backends._kernels_threads import kernel_threads

        return np.array([ember.get_num_threads(), kernel_threads()])


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_process_workers_run_on_one_thread_as_pytorchs_do(monkeypatch):
    monkeypatch.delenv("EMBER_KERNEL_THREADS", raising=False)
    with ember.device("cpu"):  # batches made on the host: a forked worker cannot start CUDA (make test-cuda's default)
        got = [b.tolist() for b in DataLoader(_Threads(), 1, num_workers=2, multiprocessing_context="fork")]
    assert got == [[[1, 1]], [[1, 1]]]
    torch = pytest.importorskip("torch")

    class TorchThreads(torch.utils.data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return torch.get_num_threads()

    loader = torch.utils.data.DataLoader(TorchThreads(), 1, num_workers=2, multiprocessing_context="fork")
    assert [b.tolist() for b in loader] == [[1], [1]]


def test_collate_dtypes_match_torch():
    tdata = pytest.importorskip("torch.utils.data")

    def kinds(v):
        if hasattr(v, "dtype"):
            return str(v.dtype).split(".")[-1]
        if isinstance(v, dict):
            return {k: kinds(x) for k, x in v.items()}
        return [kinds(x) for x in v] if isinstance(v, (list, tuple)) else type(v).__name__

    for batch in ([1.5, 2.5], [1, 2], [True, False], [np.float32(1), np.float32(2)], [(1.0, 2)], [{"x": 1.0}]):
        assert kinds(default_collate(batch)) == kinds(tdata.default_collate(batch)), batch


def _structure(v):
    """A sample's structure: types, dtypes and values, comparable across the two libraries."""
    if hasattr(v, "dtype") and hasattr(v, "shape"):
        return ("tensor", str(v.dtype).split(".")[-1], np.asarray(v).tolist())
    if isinstance(v, dict):
        return {k: _structure(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [_structure(x) for x in v])
    return (type(v).__name__, v)


class _Stream(ember.data.IterableDataset):
    def __iter__(self):
        yield from ({"x": np.full(2, i, dtype=np.float32), "y": float(i)} for i in range(3))


@pytest.mark.parametrize("workers", [0, 2])
def test_unbatched_loading_matches_torch(workers):
    tdata = pytest.importorskip("torch.utils.data")

    class TStream(tdata.IterableDataset):
        __iter__ = _Stream.__iter__

    samples = [(np.ones(2), 3.0, "a"), (np.zeros(2), 1.0, "b")]
    for ds, tds in ((samples, samples), (_Stream(), TStream())):
        for collate in (None, lambda s: s[1] if isinstance(s, tuple) else s["y"]):
            kw = {"batch_size": None, "collate_fn": collate}
            got = [_structure(b) for b in ember.data.DataLoader(ds, num_workers=workers if ds is samples else 0, **kw)]
            want = [_structure(b) for b in tdata.DataLoader(tds, **kw)]
            assert got == want


def test_default_convert_stack_and_chain_datasets_match_torch():
    tdata = pytest.importorskip("torch.utils.data")
    data = {"a": np.ones(2), "b": [np.int64(3), "x", (np.float32(1.5),)], "c": 2.5}
    assert _structure(ember.data.default_convert(data)) == _structure(tdata.default_convert(data))
    for lib in (ember.data, tdata):
        s = lib.StackDataset([1, 2, 3], [4, 5, 6])
        n = lib.StackDataset(x=[1, 2], y=["a", "b"])
        assert (s[1], len(s), n[1], len(n)) == ((2, 5), 3, {"x": 2, "y": "b"}, 2)
        with pytest.raises(ValueError):
            lib.StackDataset([1, 2], [3])
    chain = ember.data.ChainDataset([_Stream(), _Stream()])
    assert [float(s["y"]) for s in chain] == [0.0, 1.0, 2.0] * 2
