"""``make test-cuda``: the whole test suite with the default device ``cuda``, once per backend that serves
CUDA (torch and CuPy, side by side: a GPU machine's cores split between them, so both suites take the time of
one), plus the GPU-only tests (``tests/cuda/test_gpu_only.py``).

It uses the Python environment it runs in (a GPU machine's CUDA build of torch, CuPy; no network, nothing
installed) and Ember from this checkout's ``src/``. A backend that cannot serve CUDA here is skipped with one
line saying why (exit status 0). The exit status is 1 when a suite that ran failed, 2 when a package the suite
needs (``NEEDS``) is missing, which one line names.

    python tests/cuda/run_suite.py [extra pytest arguments]

Each backend's whole output goes to ``test-cuda-<backend>.log`` (``TEST_CUDA_LOGS=<dir>`` puts it elsewhere).
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def why_not(backend: str) -> str | None:
    """Why ``backend`` cannot serve a CUDA device here (one line), or None when it can."""
    code = (
        "import ember\n"
        f"s = ember.backends.available()[{backend!r}]\n"
        "cuda = [d for d in s.devices if d.startswith('cuda')]\n"
        "print('ok' if cuda else (s.reason or 'no CUDA device'))\n"
    )
    env = _env()
    env.pop("EMBER_BACKEND", None)
    env.pop("EMBER_DEVICE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    if out.returncode != 0:
        return f"cannot import Ember from {SRC}: {(out.stderr.strip().splitlines() or ['?'])[-1]}"
    answer = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "no answer"
    return None if answer == "ok" else answer


#: what the suite needs besides torch/CuPy: import name -> pip name (the ``dev`` extra's test packages; without
#: them tests fail rather than skip: records need msgpack/safetensors, datasets scikit-learn, PNNX images pillow)
NEEDS = {
    "numpy": "numpy", "pytest": "pytest", "hypothesis": "hypothesis", "msgpack": "msgpack",
    "safetensors": "safetensors", "sklearn": "scikit-learn", "scipy": "scipy", "PIL": "pillow",
}  # fmt: skip


def missing_tools() -> list[str]:
    """The pip names of the packages the suite needs that this Python lacks."""
    return [pip for mod, pip in NEEDS.items() if importlib.util.find_spec(mod) is None]


def _command(extra: list[str], share: int = 1) -> list[str]:
    """pytest's command line; ``share``: how many suites run side by side (they split the cores)."""
    cmd = [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider", "-p", "no:benchmark", *extra]
    if importlib.util.find_spec("xdist") is not None and not any(a.startswith("-n") for a in extra):
        # each worker holds a CUDA context: a suite alone takes half the cores, side by side each its share; 2 to 8
        cores = os.cpu_count() or 2
        workers = max(2, min(8, cores // 2 if share == 1 else cores // share))
        cmd += ["-n", str(workers), "--dist", "loadfile"]
    return cmd


def run(backend: str, extra: list[str], share: int = 1) -> tuple[int, str]:
    """Run the suite on ``backend`` with the default device cuda; (exit code, pytest's summary line)."""
    env = _env(EMBER_BACKEND=backend, EMBER_DEVICE="cuda")
    proc = subprocess.run(_command(extra, share), cwd=ROOT, env=env, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.strip().splitlines() if ln.strip()]
    summary = lines[-1].strip("= ") if lines else "no output"
    log = pathlib.Path(os.environ.get("TEST_CUDA_LOGS") or ROOT) / f"test-cuda-{backend}.log"
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        summary += f" (full output in {log})"
    return proc.returncode, summary


def main(argv: list[str]) -> int:
    usable = []
    for backend in ("torch", "cupy"):
        reason = why_not(backend)
        if reason is None:
            usable.append(backend)
        else:
            print(f"test-cuda: {backend}: skipped: {reason}")
    if not usable:
        return 0
    missing = missing_tools()
    if missing:
        need = " ".join(missing)
        print(f"test-cuda: cannot run: this Python ({sys.executable}) lacks {', '.join(missing)}; install them "
              f"(pip install {need}, or wheels brought from a machine with network) or run with "
              "PYTHON=<a Python that has them>")  # fmt: skip
        return 2
    with ThreadPoolExecutor(len(usable)) as pool:  # the suites side by side, each on its share of the cores
        results = list(pool.map(lambda b: run(b, argv, len(usable)), usable))
    status = 0
    for backend, (code, summary) in zip(usable, results, strict=True):
        print(f"test-cuda: {backend}: {summary}")
        status = status or (1 if code not in (0, 5) else 0)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
