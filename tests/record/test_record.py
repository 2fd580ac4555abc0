"""Records, recorders, precision, atomic writes, refusing bad files, checkpoints, PyTorch weights."""

import io
import os
import zipfile

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.record import (
    BytesRecorder,
    Checkpointer,
    JsonGzRecorder,
    NamedMpkGzRecorder,
    NamedMpkRecorder,
    RecordError,
    SafetensorsRecorder,
    load,
    load_torch_state_dict,
    load_weights,
    save,
)
from ember.testing import torch_or_none

REFUSED = (
    r"<bytes>: (truncated or corrupt|not an Ember|this is a|format version"
    r"|item '.*' holds)"
)
RECORDERS = [NamedMpkRecorder, NamedMpkGzRecorder, JsonGzRecorder, SafetensorsRecorder]


def model():
    return nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.Flatten(), nn.Linear(3 * 4 * 4, 2))


def same_state(a, b, atol=0.0):
    for (k, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        np.testing.assert_allclose(x.numpy().astype(np.float64), y.numpy().astype(np.float64), atol=atol, err_msg=k)


def rich_model():
    """Conv, batch norm with running statistics, embedding and LSTM."""
    m = nn.ModuleDict({"conv": nn.Conv2d(2, 3, 3), "bn": nn.BatchNorm2d(3), "emb": nn.Embedding(7, 4),
                       "lstm": nn.LSTM(4, 5, num_layers=2, bidirectional=True)})  # fmt: skip
    m["bn"](ember.randn(4, 3, 5, 5))  # non-trivial running statistics
    return m


@pytest.mark.parametrize("recorder", RECORDERS, ids=lambda r: r.name)
@pytest.mark.parametrize("precision,atol", [("full", 0), ("half", 2e-3), ("bfloat16", 2e-2), ("double", 0)])
def test_round_trip_every_recorder_and_precision(tmp_path, recorder, precision, atol):
    a, b = rich_model(), rich_model()
    path = recorder().save(a.into_record(), tmp_path / "m", precision)
    assert path.name.endswith(recorder.extension)
    b.load_record(recorder().load(path))
    same_state(a, b, atol)
    assert b["bn"].num_batches_tracked.dtype == ember.int64 and b["bn"].num_batches_tracked.item() == 1
    assert [p.id for p in a.parameters()] == [p.id for p in b.parameters()]


def test_random_truncations_are_refused(tmp_path):
    raw = BytesRecorder().to_bytes(rich_model().into_record())
    for cut in np.random.default_rng(0).integers(0, len(raw), 60):
        with pytest.raises(RecordError, match=REFUSED):
            BytesRecorder().from_bytes(raw[:cut])
    with pytest.raises(RecordError, match=r"not an Ember JSON record"):
        JsonGzRecorder().read(io.BytesIO(__import__("gzip").compress(raw)), "<bytes>", None)


def test_saving_in_half_precision_holds_no_converted_copy(tmp_path):
    import tracemalloc

    m = nn.Sequential(*[nn.Linear(1000, 1000) for _ in range(8)])  # 8M parameters, 32 MB in float32
    save(nn.Linear(2, 2), tmp_path / "warm.mpk", precision="half")  # msgpack's first import is ~4 MB by itself
    tracemalloc.start()
    save(m, tmp_path / "big.mpk", precision="half")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    one_tensor = 1000 * 1000 * 4
    assert peak < one_tensor + 1_000_000, f"peak {peak / 1e6:.1f} MB while saving"  # far below the 16 MB copy


def test_a_killed_save_leaves_the_previous_file(tmp_path):
    import subprocess
    import sys
    import time

    path = tmp_path / "m.mpk"
    save(nn.Linear(3, 2), path)
    before = path.read_bytes()
    code = (
        "import ember, ember.nn as nn\n"
        "m = nn.Sequential(*[nn.Linear(1000, 1000) for _ in range(30)])\n"
        "print('ready', flush=True)\n"
        f"while True: ember.record.save(m, r'{path}')\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"ready"
    time.sleep(0.3)
    proc.kill()
    proc.wait()
    proc.stdout.close()
    data = path.read_bytes()
    rec = BytesRecorder().from_bytes(data)  # whatever is there is a complete file: the old or a new one
    assert data == before or len(rec) == 60


def test_bytes_recorder_and_precision_across_models():
    a = model().to(ember.float64)
    data = BytesRecorder().to_bytes(a.into_record(), "as_is")
    b = model()  # float32: a float64 record loads into a float32 model
    b.load_record(BytesRecorder().from_bytes(data))
    same_state(a, b, 1e-6)
    assert b[0].weight.dtype == ember.float32


def test_record_holds_tensors_by_reference():
    m = nn.Linear(2, 2)
    rec = m.into_record()
    assert rec["weight"]._data is m.weight._data


def test_file_says_what_it_is_and_bad_files_are_refused(tmp_path):
    path = save(model(), tmp_path / "m.mpk")
    raw = path.read_bytes()
    assert b"ember.record.mpk" in raw and ember.__version__.encode() in raw and b"full" in raw
    (tmp_path / "trunc.mpk").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(RecordError, match=r"trunc\.mpk"):
        load(tmp_path / "trunc.mpk")
    for i in range(len(raw)):  # any flipped byte anywhere is refused, never silently loaded
        bad = bytearray(raw)
        bad[i] ^= 0x55
        with pytest.raises(RecordError, match=REFUSED):
            BytesRecorder().from_bytes(bytes(bad))
    (tmp_path / "other.mpk").write_bytes(b"\x93\x01\x02\x03")
    with pytest.raises(RecordError, match="not an Ember record"):
        load(tmp_path / "other.mpk")
    with pytest.raises(RecordError, match=r"this is a 'ember.record.mpk' file, expected 'ember.record.json'"):
        JsonGzRecorder().read(io.BytesIO(__import__("gzip").compress(b'{"format": "ember.record.mpk"}\n')), "x", None)


def test_mismatches_name_the_key_and_shapes(tmp_path):
    path = save(nn.Linear(3, 2), tmp_path / "lin.mpk")
    with pytest.raises(ValueError, match=r"lin.mpk: 'weight' has shape \(2, 3\) but the module expects \(4, 3\)"):
        nn.Linear(3, 4).load(path)
    with pytest.raises(KeyError, match=r"missing keys \[\], unexpected keys \['bias'\]"):
        nn.Linear(3, 2, bias=False).load(path)


def test_writes_are_atomic(tmp_path, monkeypatch):
    path = save(nn.Linear(3, 2), tmp_path / "m.mpk")
    before = path.read_bytes()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        save(nn.Linear(3, 2), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.mpk"]  # no temporary file left behind


def test_modules_pickle_in_memory_but_no_loader_unpickles(tmp_path):
    import pickle

    m = nn.Linear(2, 2)
    assert pickle.loads(pickle.dumps(m)).weight.id == m.weight.id  # in-process use (multiprocessing)
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps(os.system))  # a pickle that would import os.system
    with pytest.raises((RecordError, pickle.UnpicklingError, RuntimeError)):
        ember.load(path)


def _train(model, opt, steps, seed):
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(steps):
        x = ember.tensor(rng.standard_normal((8, 1, 6, 6)), dtype=ember.float32)
        y = ember.tensor(rng.integers(0, 2, 8))
        loss = nn.functional.cross_entropy(model(nn.functional.dropout(x, 0.1)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_checkpointer_resume_is_bit_exact_and_prunes(tmp_path):
    from ember.optim import Adam

    ember.manual_seed(0)
    ref = model()
    init_state = {k: v.clone() for k, v in ref.state_dict().items()}
    opt = Adam(ref.parameters(), lr=1e-2)
    full = _train(ref, opt, 4, 1) + _train(ref, opt, 4, 2)

    ember.manual_seed(0)
    m = model()
    m.load_state_dict(init_state)
    opt = Adam(m.parameters(), lr=1e-2)
    ck = Checkpointer(tmp_path, keep_last=2, metric="loss", mode="min")
    first = _train(m, opt, 4, 1)
    ck.save(1, m, opt, metrics={"loss": 0.1})
    ck.save(2, m, opt, metrics={"loss": 0.5})
    ck.save(3, m, opt, metrics={"loss": 0.9})
    assert [p.name for p in ck.paths()] == ["checkpoint-00001.mpk", "checkpoint-00002.mpk", "checkpoint-00003.mpk"]
    assert ck.best_path.name == "checkpoint-00001.mpk"
    ck.save(4, m, opt, metrics={"loss": 0.7})
    assert [p.name for p in ck.paths()] == ["checkpoint-00001.mpk", "checkpoint-00003.mpk", "checkpoint-00004.mpk"]

    m2 = model()
    opt2 = Adam(m2.parameters(), lr=1e-2)
    info = ck.load_latest(m2, opt2)
    assert info["epoch"] == 4
    rest = _train(m2, opt2, 4, 2)
    assert first + rest == full  # bit for bit


@pytest.mark.skipif(torch_or_none() is None, reason="torch not installed")
def test_weights_from_pytorch(tmp_path, torch):
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    torch.save(t.state_dict(), tmp_path / "w.pt")
    e = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    assert load_weights(e, tmp_path / "w.pt", strict=True) == ([], [])
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    # float32 through two layers: agree to float32 rounding, not bit for bit (near-zero outputs need atol)
    np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)  # fmt: skip
    # without torch: the restricted unpickler reads the same archive
    from ember.record._torch import _read_zip

    arrays = _read_zip(tmp_path / "w.pt")
    assert set(arrays) == set(t.state_dict()) and arrays["0.weight"].shape == (4, 3)
    # Ember writes a state_dict that torch loads with weights_only=True
    from ember.record import save_torch_state_dict

    save_torch_state_dict(e, tmp_path / "back.pt")
    t2 = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    t2.load_state_dict(torch.load(tmp_path / "back.pt", weights_only=True))
    np.testing.assert_array_equal(t2[0].weight.detach().numpy(), e[0].weight.detach().numpy())
    # key remapping and a report of what did not match
    torch.save({"net.0.weight": t[0].weight, "net.0.bias": t[0].bias, "junk": t[2].bias}, tmp_path / "r.pt")
    report = load_weights(e, tmp_path / "r.pt", remap=[(r"^net\.", "")])
    assert report.missing_keys == ["2.weight", "2.bias"] and report.unexpected_keys == ["junk"]


def test_restricted_unpickler_refuses_code(tmp_path):
    import pickle

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"w": Evil()}))
    (tmp_path / "evil.pt").write_bytes(buf.getvalue())
    from ember.record._torch import _read_zip

    with pytest.raises(RecordError, match=r"refusing to load (posix|os|nt)\.system"):
        _read_zip(tmp_path / "evil.pt")
    if torch_or_none() is not None:
        with pytest.raises(RecordError, match="weights-only"):
            load_torch_state_dict(tmp_path / "evil.pt")


def test_a_device_tensor_is_converted_to_the_precision_on_its_device(tmp_path, monkeypatch):
    """Saving in half precision from a device converts each item there first: the host holds only what is written
    (run with NumPy presented as a CUDA device, the throwaway backend of tests/backends). The bytes are those of
    the same model saved from the CPU; float64 to float16 stays on the host (a device may round it twice)."""
    from ember import backends

    from ..backends.test_adding_a_backend import ThrowawayBackend

    with ember.device("cpu"):
        m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2).double())
    save(m, tmp_path / "cpu.mpk", precision="half")
    saved = dict(backends._REGISTRY), dict(backends._CACHE), dict(backends._SELECTED)
    backends.register_backend("throwaway", ThrowawayBackend, ("cuda",), "nothing", cuda_rank=-1,
                              device_count=lambda t: 1 if t == "cuda" else 0)  # fmt: skip
    backends._SELECTED.pop("cuda", None)
    casts = []
    real = ThrowawayBackend.astype

    def astype(self, a, d):
        casts.append((str(a.dtype), d))
        return real(self, a, d)

    monkeypatch.setattr(ThrowawayBackend, "astype", astype)
    try:
        m.to("cuda")
        assert m[0].weight._backend.name == "throwaway"
        casts.clear()
        save(m, tmp_path / "dev.mpk", precision="half")
    finally:
        for d, s in zip((backends._REGISTRY, backends._CACHE, backends._SELECTED), saved, strict=True):
            d.clear()
            d.update(s)
    assert casts == [("float32", ember.float16), ("float32", ember.float16)]  # the float64 layer: on the host
    assert (tmp_path / "dev.mpk").read_bytes() == (tmp_path / "cpu.mpk").read_bytes()
