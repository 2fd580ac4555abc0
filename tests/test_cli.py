"""The ``ember`` command: every option validated, one-line errors (never a traceback), plain output in a pipe."""

import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

import ember
from ember.cli import main
from ember.tasks import TASKS


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--epochs", "0"], "ember: --epochs must be >= 1 (got 0)"),
        (["--epochs", "-3"], "ember: --epochs must be >= 1 (got -3)"),
        (["--epochs", "2.5"], "ember: --epochs must be an integer (got '2.5')"),
        (["--batch-size", "0"], "ember: --batch-size must be >= 1 (got 0)"),
        (["--lr", "0"], "ember: --lr must be > 0 (got 0)"),
        (["--lr", "-0.1"], "ember: --lr must be > 0 (got -0.1)"),
        (["--lr", "nan"], "ember: --lr must be a finite number (got nan)"),
        (["--lr", "inf"], "ember: --lr must be a finite number (got inf)"),
        (["--limit", "0"], "ember: --limit must be >= 1 (got 0)"),
        (["--seed", "-1"], "ember: --seed must be >= 0 (got -1)"),
        (["--device", "gpu"], "ember: --device must be cpu, cuda or cuda:N (got 'gpu')"),
        (["--device", "cuda:x"], "ember: --device must be cpu, cuda or cuda:N (got 'cuda:x')"),
    ],
)
def test_bad_option_values_are_refused_in_one_line(args, message, tmp_path, capsys):
    assert main(["train", "digits-mlp", "--out", str(tmp_path), *args]) == 2
    captured = capsys.readouterr()
    assert captured.err == message + "\n" and captured.out == ""
    assert not any(tmp_path.iterdir())  # nothing ran


def test_unknown_example_and_option(capsys):
    assert main(["train", "imagenet"]) == 2
    assert capsys.readouterr().err == f"ember: unknown example 'imagenet'; choose from: {', '.join(TASKS)}\n"
    assert main(["train", "digits-mlp", "--bogus"]) == 2
    assert capsys.readouterr().err == "ember: unrecognized arguments: --bogus\n"


def test_out_naming_an_existing_file(tmp_path, capsys):
    f = tmp_path / "a-file"
    f.write_text("not a folder")
    assert main(["train", "digits-mlp", "--out", str(f)]) == 2
    assert capsys.readouterr().err == f"ember: --out must be a folder ({f} is an existing file)\n"
    assert f.read_text() == "not a folder"


def test_device_cuda_without_cuda(tmp_path, capsys):
    cuda = getattr(ember, "cuda", None)
    if cuda is not None and cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert main(["train", "digits-mlp", "--device", "cuda", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == "ember: --device cuda: CUDA is not available on this machine (use --device cpu)\n"


def test_download_offline_is_one_line(tmp_path, capsys, monkeypatch):
    def offline(*a, **k):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    rc = main(["train", "mnist-mlp", "--data-dir", str(tmp_path / "data"), "--download", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.startswith("ember: could not download ") and "place the file in" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_help_lists_every_example(capsys):
    assert main(["--help"]) == 0
    top = capsys.readouterr().out
    assert main(["train", "--help"]) == 0
    train = capsys.readouterr().out
    for name, task in TASKS.items():
        assert name in top and task.description in top
        assert name in train


def test_resume_with_nothing_to_resume_says_so(tmp_path, capsys):
    rc = main(["train", "linear-regression", "--epochs", "1", "--limit", "40", "--out", str(tmp_path), "--resume",
               "--no-progress"])  # fmt: skip
    assert rc == 0
    assert f"ember: nothing to resume in {tmp_path / 'checkpoints'}; starting from epoch 1" in capsys.readouterr().err


def test_explicit_values_are_used_not_replaced_by_defaults(tmp_path):
    # The old code read `args.epochs or default`, so explicit small values could vanish; check they arrive.
    rc = main(["train", "linear-regression", "--epochs", "1", "--batch-size", "1", "--limit", "10",
               "--lr", "0.001", "--out", str(tmp_path), "--no-progress"])  # fmt: skip
    assert rc == 0
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert len(lines) == 1 and '"lr": 0.001' in lines[0]


def test_output_to_a_pipe_is_one_plain_line_per_epoch(tmp_path):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [sys.executable, "-m", "ember.cli", "train", "linear-regression", "--epochs", "3", "--limit", "40",
         "--out", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stdout and "\r" not in proc.stderr
    epoch_lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("epoch ")]
    assert [ln.split(" | ")[0] for ln in epoch_lines] == ["epoch 1", "epoch 2", "epoch 3"]
    assert proc.stderr == ""


def test_resume_with_progress_says_it_once(tmp_path, capsys):
    rc = main(["train", "linear-regression", "--epochs", "1", "--limit", "40", "--out", str(tmp_path), "--resume"])
    out = capsys.readouterr()
    assert rc == 0 and (out.out + out.err).count("nothing to resume") == 1


def test_help_speaks_to_users_and_pnnx_is_there_after_import_ember(capsys):
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    assert "(spec" not in text and "linear-regression" in text
    proc = subprocess.run([sys.executable, "-c", "import ember; print(callable(ember.pnnx.load))"],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert proc.stdout.strip() == "True", proc.stderr  # a plain ``import ember`` reaches ember.pnnx
