"""Ember's process-wide malloc settings (ember/_memory.py): on by default on glibc, off on request."""

import os
import subprocess
import sys

import pytest

PROBE = "import ember._memory as m; print(m.malloc_tuned())"


def _tuned(env_value):
    env = dict(os.environ)
    env.pop("EMBER_MALLOC_TUNING", None)
    if env_value is not None:
        env["EMBER_MALLOC_TUNING"] = env_value
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.mark.skipif(not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"), reason="glibc only")
def test_malloc_tuned_by_default_on_glibc():
    assert _tuned(None) == "True"


@pytest.mark.parametrize("value", ["0", "off"])
def test_malloc_tuning_opt_out(value):
    assert _tuned(value) == "False"
