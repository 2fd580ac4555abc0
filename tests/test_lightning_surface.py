"""The pieces of PyTorch's surface that PyTorch Lightning touches (found by running it with ``torch`` aliased to
Ember), each run under PyTorch and Ember alike."""

from __future__ import annotations

import importlib
import io
import pickle

import pytest

import ember

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


def _parse_to_calls(lib):
    t = lib.zeros(2, dtype=lib.float64)
    return [
        ((), {}), (("cpu",), {}), ((lib.float16,), {}), (("cpu", lib.float16), {}), ((t,), {}),
        ((), {"device": "cpu"}), ((), {"dtype": lib.int32}), ((lib.device("cpu"), lib.float32, True), {}),
        ((lib.float32, True), {}), ((t, True), {}), ((), {"memory_format": lib.channels_last}),
        (("cpu",), {"non_blocking": True}), (("cuda:1",), {}), (("cpu", None, False), {}),
    ]  # fmt: skip


def _parse_to_errors(lib):
    return [((lib.float32, lib.float64), {}), ((), {"foo": 1}), (("cpu", "cpu"), {}), ((), {"dtype": "float32"}),
            ((lib.float32,), {"dtype": lib.float64}), (("cpu", lib.float32, True, True, True), {}),
            ((), {"memory_format": "channels_last"}), (([1],), {})]  # fmt: skip


def test_parse_to_reads_the_arguments_of_to_as_pytorch():
    def norm(r):
        dev, dt, nb, fmt = r
        return (None if dev is None else str(dev), None if dt is None else str(dt).split(".")[-1], nb,
                None if fmt is None else str(fmt).split(".")[-1])  # fmt: skip

    for (ta, tk), (ea, ek) in zip(_parse_to_calls(torch), _parse_to_calls(ember), strict=True):
        want = torch._C._nn._parse_to(*ta, **tk)
        got = ember._C._nn._parse_to(*ea, **ek)
        assert norm(got) == norm(want), (ta, tk)
        assert got[0] is None or isinstance(got[0], ember.device)
    for lib in (torch, ember):
        for a, k in _parse_to_errors(lib):
            with pytest.raises(TypeError, match=r"to\(\)"):
                lib._C._nn._parse_to(*a, **k)
        for a, k in [
            ((lib.float32,), {"copy": False}),
            (("cpu", None, False, True), {}),
            ((lib.ones(1), True, True), {}),
        ]:
            with pytest.raises(RuntimeError, match="does not accept copy argument"):
                lib._C._nn._parse_to(*a, **k)


def test_pytorch_file_reader_reads_a_saved_archive_as_pytorchs(tmp_path):
    path = str(tmp_path / "x.pt")
    torch.save({"w": torch.arange(6.0).reshape(2, 3), "n": 3}, path)
    buf = io.BytesIO()
    torch.save([torch.ones(2, dtype=torch.int64)], buf)
    readers = [
        (torch._C.PyTorchFileReader, torch.PyTorchFileReader),
        (ember._C.PyTorchFileReader, ember.PyTorchFileReader),
    ]
    assert readers[1][0] is readers[1][1] and readers[0][0] is readers[0][1]
    seen = []
    for reader, _ in readers:
        r = reader(path)
        recs = r.get_all_records()
        with open(path, "rb") as f:
            raw = f.read()
        offsets = {n: (r.get_record_offset(n), r.get_record_size(n), r.get_record_header_offset(n)) for n in recs}
        for n, (off, size, _) in offsets.items():  # the bytes lie at that offset in the file, stored as they are
            assert raw[off : off + size] == r.get_record(n)
        buf.seek(0)
        seen.append((recs, offsets, r.get_record("data.pkl"), r.has_record("data/0"), r.has_record("nope"),
                     r.serialization_id(), reader(buf).get_all_records()))  # fmt: skip
        with pytest.raises(RuntimeError, match="nope"):
            r.get_record("nope")
        with pytest.raises(RuntimeError):
            reader(str(tmp_path / "missing.pt"))
        (tmp_path / "bad.pt").write_text("hello")
        with pytest.raises(RuntimeError, match="zip archive"):
            reader(str(tmp_path / "bad.pt"))
    assert seen[0] == seen[1]


@LIBS
def test_dataloader_iterators_are_pytorchs_classes(lib):
    dl_mod = importlib.import_module(lib.__name__ + (".utils.data.dataloader" if lib is torch else ".data.dataloader"))
    loader = lib.utils.data.DataLoader(list(range(10)), batch_size=3)
    it = iter(loader)
    assert type(it).__name__ == "_SingleProcessDataLoaderIter" and isinstance(it, dl_mod._BaseDataLoaderIter)
    assert isinstance(it, dl_mod._SingleProcessDataLoaderIter) and not isinstance(
        it, dl_mod._MultiProcessingDataLoaderIter
    )
    assert iter(it) is it and len(it) == 4 and it._num_yielded == 0
    assert next(it).tolist() == [0, 1, 2] and it._num_yielded == 1
    assert [b.tolist() for b in it] == [[3, 4, 5], [6, 7, 8], [9]] and it._num_yielded == 4
    with pytest.raises(NotImplementedError):
        pickle.dumps(iter(loader))
    it = iter(lib.utils.data.DataLoader(list(range(10)), batch_size=3, num_workers=1))
    assert isinstance(it, dl_mod._MultiProcessingDataLoaderIter) and isinstance(it, dl_mod._BaseDataLoaderIter)
    assert next(it).tolist() == [0, 1, 2]
    it._shutdown_workers()
    with pytest.raises(StopIteration):
        next(it)


@LIBS
def test_function_mode_stack(lib):
    ov = importlib.import_module(lib.__name__ + ".overrides")

    class Passthrough(ov.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    assert ov._get_current_function_mode_stack() == []
    with Passthrough() as outer:
        with Passthrough() as inner:
            assert ov._get_current_function_mode_stack() == [outer, inner]
            assert ov._len_torch_function_stack() == 2
            assert (lib.ones(2) + 1).tolist() == [2.0, 2.0]
        assert ov._get_current_function_mode_stack() == [outer]
    assert ov._get_current_function_mode_stack() == []
    with pytest.raises(RuntimeError, match="pop from empty mode stack"):
        ov._pop_mode()
    with pytest.raises(NotImplementedError):
        ov.TorchFunctionMode().__torch_function__(lib.add, (), (lib.ones(1), 1))


@LIBS
def test_names_lightning_imports(lib):
    assert isinstance(lib.Tensor, lib._C._TensorMeta) and isinstance(lib.nn.Parameter, lib._C._TensorMeta)
    assert isinstance(lib.ScriptModule, type) and isinstance(lib.ScriptFunction, type)
    assert lib._dynamo.OptimizedModule is lib._dynamo.eval_frame.OptimizedModule
    keys = importlib.import_module(lib.__name__ + ".nn.modules.module")._IncompatibleKeys
    got = lib.nn.Linear(2, 2).load_state_dict({"weight": lib.zeros(2, 2)}, strict=False)
    assert isinstance(got, keys) and got.missing_keys == ["bias"]
    assert isinstance(lib.profiler.kineto_available(), bool)


def test_kineto_is_not_available_on_ember():
    assert ember.profiler.kineto_available() is False  # Ember's profiler is its own host recorder
