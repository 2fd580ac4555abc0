"""``pip install ember`` as a user does it: the wheel, built from this checkout, in fresh virtualenvs.

Marked ``wheel`` and left out of the default run (``addopts``); ``make test`` runs it once (``pytest -m wheel``).
Each virtualenv is new and empty (``venv --without-pip``; the test's own pip installs into it with ``--python``).
Packages come from a wheel cache (``EMBER_WHEEL_CACHE``, default ``~/.cache/ember/test-wheels``) filled once
by ``pip download`` from the configured index, then installed with ``--no-index``: reruns do not touch the
network. What is checked:

- a bare install with the lowest NumPy Ember supports runs the README's quickstart and ``ember --help``, and an
  optional feature names the extra that brings it;
- a bare install with the highest NumPy runs the quickstart, then the extras ``record``, ``vision`` and
  ``tensorboard``, installed one at a time, each run a smoke program of what they bring;
- ``[torch]`` and ``[all]`` resolve from the index (``pip install --dry-run``) to torch 2.13.0 and every extra
  package; the real install (about 900 MB) runs with ``EMBER_TEST_INSTALL_TORCH=1``;
- the other Pythons this machine has (3.12, 3.13) install the bare wheel and run the quickstart.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CACHE = Path(os.environ.get("EMBER_WHEEL_CACHE", Path.home() / ".cache" / "ember" / "test-wheels"))
LOWEST_NUMPY = "numpy==" + re.search(r"numpy>=([\d.]+)", " ".join(PYPROJECT["project"]["dependencies"]))[1] + ".*"


def _run(*cmd: str | Path, timeout: int = 600, **kw) -> str:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, check=False, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _pip(python: Path, *args: str | Path, timeout: int = 600) -> str:
    """The test's pip acting on another interpreter's environment (pip >= 22.3: ``--python``)."""
    return _run(sys.executable, "-m", "pip", "--python", python, *args, "-q", "--disable-pip-version-check",
                timeout=timeout)  # fmt: skip


def _extra(name: str) -> list[str]:
    return list(PYPROJECT["project"]["optional-dependencies"][name])


def _fill_cache(python: Path, requirements: list[str]) -> Path:
    """Download ``requirements`` (with dependencies) for ``python`` into the cache, once per set and interpreter."""
    version = _run(python, "-c", "import sys; print(sys.implementation.cache_tag)").strip()
    key = hashlib.sha256(json.dumps([version, sorted(requirements)]).encode()).hexdigest()[:16]
    folder = CACHE / version
    stamp = folder / f".{key}.done"
    if not stamp.exists():
        folder.mkdir(parents=True, exist_ok=True)
        _pip(python, "download", "-d", folder, *requirements)
        stamp.touch()
    return folder


def _venv(base: Path, python: str | Path = sys.executable) -> Path:
    _run(python, "-m", "venv", "--without-pip", base)
    return base / "bin" / "python"


def _install(python: Path, cache: Path, *requirements: str | Path) -> None:
    _pip(python, "install", "--no-compile", "--no-index", "--find-links", cache, *requirements)


def _quickstart() -> str:
    text = (ROOT / "README.md").read_text()
    return re.search(r"## Quickstart\s+```python\n(.*?)```", text, re.DOTALL)[1]


def _check_quickstart(python: Path, cwd: Path, env: dict[str, str] | None = None) -> None:
    out = _run(python, "-c", _quickstart(), cwd=cwd, env=env)
    losses = [float(v) for v in re.findall(r"epoch \d: mean training loss ([\d.]+)", out)]
    assert len(losses) == 3 and losses[-1] < losses[0] < 2.5, out
    assert (cwd / "mlp.mpk").stat().st_size > 0


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this checkout, built from a copy (the checkout gets no build/ or egg-info)."""
    src = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    dist = tmp_path_factory.mktemp("dist")
    try:  # this environment's build backend when it is recent enough (fast); else pip's isolated build
        import setuptools

        isolation = ["--no-build-isolation"] if int(setuptools.__version__.split(".")[0]) >= 77 else []
    except ImportError:
        isolation = []
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", dist, src)
    (found,) = dist.glob("ember-*.whl")
    return found


def test_bare_install_with_the_lowest_numpy_runs_the_quickstart(wheel, tmp_path):
    python = _venv(tmp_path / "venv")
    cache = _fill_cache(python, [LOWEST_NUMPY, *PYPROJECT["project"]["dependencies"]])
    _install(python, cache, wheel, LOWEST_NUMPY)
    version = _run(python, "-c", "import numpy; print(numpy.__version__)").strip()
    assert version.startswith(LOWEST_NUMPY.removeprefix("numpy==").removesuffix("*")), version
    _check_quickstart(python, tmp_path)
    assert "ember train digits-cnn" in _run(tmp_path / "venv" / "bin" / "ember", "--help")
    # an optional feature names the extra that brings what it needs
    probe = "from ember.pnnx._vision import load_image\ntry:\n    load_image('x')\nexcept ImportError as e:\n"
    probe += "    print(e)\n"
    assert "pip install 'ember[vision]'" in _run(python, "-c", probe, cwd=tmp_path)


_SMOKE = {
    "record": """
import ember
from ember.record import load_weights
import safetensors.numpy
safetensors.numpy.save_file({"weight": ember.ones(2, 3).numpy(), "bias": ember.zeros(2).numpy()}, "w.safetensors")
layer = ember.nn.Linear(3, 2)
load_weights(layer, "w.safetensors", strict=True)
assert float(layer(ember.ones(1, 3)).sum()) == 6.0
""",
    "vision": """
import os
import numpy as np
from PIL import Image
from ember.data import DataLoader, ImageFolder, transforms as T
for c in ("cat", "dog"):
    os.makedirs(c)
    Image.fromarray(np.full((12, 10, 3), 7, np.uint8)).save(f"{c}/a.png")
ds = ImageFolder(".", transform=T.Compose([T.RandomResizedCrop(8), T.ToTensor()]))
x, y = next(iter(DataLoader(ds, batch_size=2)))
assert x.shape == (2, 3, 8, 8) and y.tolist() == [0, 1]
""",
    "tensorboard": """
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from ember.utils.tensorboard import SummaryWriter
with SummaryWriter("logs") as w:
    w.add_scalar("loss", 0.5, 1)
acc = EventAccumulator("logs")
acc.Reload()
assert acc.Scalars("loss")[0].value == 0.5
""",
}


def test_extras_one_at_a_time_with_the_highest_numpy(wheel, tmp_path):
    python = _venv(tmp_path / "venv")
    every = [*PYPROJECT["project"]["dependencies"], *(r for name in _SMOKE for r in _extra(name))]
    cache = _fill_cache(python, every)
    _install(python, cache, wheel)
    highest = _run(python, "-c", "import numpy; print(numpy.__version__)").strip()
    assert int(highest.split(".")[0]) >= 2, highest
    _check_quickstart(python, tmp_path)
    for name, program in _SMOKE.items():
        _install(python, cache, f"{wheel}[{name}]")
        work = tmp_path / name
        work.mkdir()
        _run(python, "-c", program, cwd=work)
    assert _run(python, "-c", "import numpy; print(numpy.__version__)").strip() == highest


@pytest.mark.parametrize("extra", ["torch", "all"])
def test_torch_and_all_extras_resolve_to_the_pinned_torch(wheel, tmp_path, extra):
    python = _venv(tmp_path / "venv")
    report = tmp_path / "report.json"
    _pip(python, "install", "--dry-run", "--ignore-installed", "--report", report, f"{wheel}[{extra}]")
    names = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    assert names["torch"].startswith("2.13.0") and "numpy" in names and "msgpack" in names
    if extra == "all":
        assert {"tensorboard", "pillow", "safetensors", "scipy", "scikit-learn", "matplotlib", "tqdm"} <= set(names)


@pytest.mark.skipif(os.environ.get("EMBER_TEST_INSTALL_TORCH") != "1", reason="set EMBER_TEST_INSTALL_TORCH=1 "
                    "to install ember[all] with torch (about 900 MB) in a fresh virtualenv")  # fmt: skip
def test_all_extras_installed_train_on_the_torch_backend(wheel, tmp_path):
    python = _venv(tmp_path / "venv")
    _pip(python, "install", f"{wheel}[all]", timeout=1800)
    _check_quickstart(python, tmp_path, env=dict(os.environ, EMBER_BACKEND="torch"))


def _interpreter(minor: int) -> str | None:
    found = sorted(glob.glob(str(Path.home() / f".pyenv/versions/3.{minor}.*/bin/python3.{minor}")))
    return found[-1] if found else shutil.which(f"python3.{minor}")


@pytest.mark.parametrize("minor", [12, 13])
def test_other_pythons_install_the_wheel_and_run_the_quickstart(wheel, tmp_path, minor):
    interpreter = _interpreter(minor)
    if interpreter is None:
        pytest.skip(f"no Python 3.{minor} on this machine")
    python = _venv(tmp_path / "venv", interpreter)
    cache = _fill_cache(python, list(PYPROJECT["project"]["dependencies"]))
    _install(python, cache, wheel)
    _check_quickstart(python, tmp_path)
