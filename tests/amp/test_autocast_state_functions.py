"""PyTorch's functions that read and set a thread's autocast state outside ``with autocast(...)`` (libraries call
them), run as the same code under torch and Ember."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

SRC = Path(__file__).resolve().parents[2] / "src"

PROGRAM = textwrap.dedent("""
    import sys, warnings
    if sys.argv[1] == "ember":
        import ember; sys.modules["torch"] = ember
    import torch
    warnings.simplefilter("ignore")
    out = []
    out.append((torch.is_autocast_enabled(), torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"),
                torch.get_autocast_dtype("cuda"), torch.get_autocast_cpu_dtype(), torch.get_autocast_gpu_dtype(),
                torch.is_autocast_cpu_enabled(), torch.is_autocast_cache_enabled()))
    a, b = torch.ones(3, 4), torch.ones(4, 2)
    torch.set_autocast_dtype("cpu", torch.float16)
    torch.set_autocast_enabled("cpu", True)
    out.append((torch.is_autocast_enabled("cpu"), torch.is_autocast_enabled(), (a @ b).dtype, (a + b[:, :1].T).dtype))
    with torch.autocast("cpu", enabled=False):
        out.append((torch.is_autocast_enabled("cpu"), (a @ b).dtype))
    out.append((torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")))
    torch.set_autocast_enabled("cpu", False)
    out.append(((a @ b).dtype, torch.is_autocast_enabled("cpu")))
    with torch.autocast("cpu"):  # the thread's dtype is the block's default
        out.append(((a @ b).dtype, torch.get_autocast_dtype("cpu"), torch.is_autocast_cpu_enabled()))
    torch.set_autocast_cpu_dtype(torch.bfloat16)
    out.append((torch.get_autocast_cpu_dtype(), torch.get_autocast_dtype("cpu")))
    torch.set_autocast_cpu_enabled(True)
    out.append(torch.is_autocast_cpu_enabled())
    torch.set_autocast_cpu_enabled(False)
    out.append((torch.autocast_increment_nesting(), torch.autocast_increment_nesting(),
                torch.autocast_decrement_nesting(), torch.autocast_decrement_nesting()))
    torch.set_autocast_cache_enabled(False)
    out.append(torch.is_autocast_cache_enabled())
    torch.set_autocast_cache_enabled(True)
    torch.clear_autocast_cache()
    out.append(torch.GradScaler is torch.amp.GradScaler)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        torch.get_autocast_gpu_dtype()
        out.append([x.category.__name__ for x in w])
    print(repr(out).replace("ember.", "torch."))
""")


def _run(lib: str) -> str:
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", PROGRAM, lib], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_autocast_state_functions_answer_as_torch():
    assert _run("ember") == _run("torch")
