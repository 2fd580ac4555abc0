"""Files Ember writes: modes from the umask, no stale temporary files, read-only files kept, resume fallback."""

import os
import stat
import subprocess
import sys
import textwrap

import pytest

import ember
import ember.nn as nn
from ember.optim import SGD
from ember.record import Checkpointer, RecordError, atomic_write
from ember.record._atomic import atomic_open


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(p):
    return stat.S_IMODE(p.stat().st_mode)


def hidden(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_new_files_get_0666_less_the_umask(tmp_path, umask_022):
    ember.manual_seed(0)
    model = nn.Linear(2, 2)
    saved = model.save(tmp_path / "m.mpk")
    atomic_write(tmp_path / "log.csv", b"a,b\n")
    ck = Checkpointer(tmp_path / "ck").save(1, model, SGD(model.parameters(), lr=0.1))
    for p in (saved, tmp_path / "log.csv", ck, tmp_path / "ck" / "checkpoints.json"):
        assert mode(p) == 0o644, p
    os.umask(0o002)
    atomic_write(tmp_path / "group.csv", b"x")
    assert mode(tmp_path / "group.csv") == 0o664


def test_replacing_a_file_keeps_its_mode(tmp_path, umask_022):
    p = tmp_path / "shared.csv"
    p.write_bytes(b"old")
    os.chmod(p, 0o660)
    atomic_write(p, b"new")
    assert p.read_bytes() == b"new" and mode(p) == 0o660


def test_saving_over_a_read_only_file_fails_and_keeps_it(tmp_path):
    p = tmp_path / "frozen.mpk"
    nn.Linear(2, 2).save(p)
    before = p.read_bytes()
    os.chmod(p, 0o444)
    with pytest.raises(PermissionError, match=r"frozen\.mpk: the file is read-only"):
        nn.Linear(2, 2).save(p)
    with pytest.raises(PermissionError):
        atomic_write(p, b"x")
    assert p.read_bytes() == before and mode(p) == 0o444 and hidden(tmp_path) == []


def test_a_failed_save_leaves_no_temporary_file(tmp_path):
    with pytest.raises(RuntimeError, match="boom"), atomic_open(tmp_path / "x.bin") as f:
        f.write(b"partial")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_a_killed_save_is_cleaned_up_by_the_next_save(tmp_path):
    # A process killed with SIGKILL in the middle of a save (no `finally` runs) leaves its temporary file.
    script = textwrap.dedent(f"""
        import os, signal
        from ember.record._atomic import atomic_open
        with atomic_open({str(tmp_path / "model.mpk")!r}) as f:
            f.write(b"half of a model")
            f.flush()
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", script], check=False, timeout=60)
        assert proc.returncode == -9
    assert len(hidden(tmp_path)) == 1  # the second save removed the first one's file; its own is left
    (tmp_path / ".other.mpk.1.abcd.tmp").write_bytes(b"another target's temporary file")
    nn.Linear(2, 2).save(tmp_path / "model.mpk")
    assert hidden(tmp_path) == [".other.mpk.1.abcd.tmp"]  # only the same target's stale files go
    assert (tmp_path / "model.mpk").exists()


def test_a_live_save_of_the_same_target_is_not_disturbed(tmp_path):
    target = tmp_path / "w.bin"
    with atomic_open(target) as outer:
        outer.write(b"outer")
        atomic_write(target, b"inner")  # a second save of the same target (e.g. another thread) meanwhile
        assert len(hidden(tmp_path)) == 1  # the outer, still active, temporary file was left alone
    assert target.read_bytes() == b"outer" and hidden(tmp_path) == []


def test_save_keeps_the_name_given(tmp_path):
    model = nn.Linear(2, 2)
    assert model.save(tmp_path / "m.foo") == tmp_path / "m.foo"
    assert (tmp_path / "m.foo").exists() and not (tmp_path / "m.foo.mpk").exists()
    model.load(tmp_path / "m.foo")
    assert model.save(tmp_path / "plain") == tmp_path / "plain.mpk"  # no extension: the format's is added


def _trained(seed):
    ember.manual_seed(seed)
    model = nn.Linear(3, 2)
    return model, SGD(model.parameters(), lr=0.1)


def test_load_latest_falls_back_from_a_truncated_checkpoint(tmp_path):
    ck = Checkpointer(tmp_path, keep_last=3)
    saved = {}
    for epoch in (1, 2, 3):
        model, opt = _trained(epoch)
        ck.save(epoch, model, opt)
        saved[epoch] = model.weight.detach().numpy().copy()
    newest = ck.paths()[-1]
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])  # a crash mid-write of the disk

    model, opt = _trained(99)
    with pytest.warns(UserWarning, match=r"skipped unreadable checkpoint.*resumed from checkpoint-00002.*00003"):
        info = ck.load_latest(model, opt)
    assert info["epoch"] == 2 and info["path"].name.startswith("checkpoint-00002")
    assert (model.weight.detach().numpy() == saved[2]).all()


def test_load_latest_with_no_intact_checkpoint_names_them(tmp_path):
    ck = Checkpointer(tmp_path, keep_last=2)
    for epoch in (1, 2):
        ck.save(epoch, *_trained(epoch))
    for p in ck.paths():
        p.write_bytes(b"\x00" * 10)
    with pytest.raises(RecordError, match=r"no intact checkpoint.*checkpoint-00002.*checkpoint-00001"):
        ck.load_latest(*_trained(0))


def test_a_model_mismatch_is_not_hidden_by_the_fallback(tmp_path):
    ck = Checkpointer(tmp_path)
    ck.save(1, *_trained(1))
    ck.save(2, *_trained(2))
    other = nn.Linear(5, 5)
    with pytest.raises(ValueError, match="checkpoint-00002"):  # an error, not a reason to try older files
        ck.load_latest(other)
