"""Ember's process-wide malloc settings (ember/_memory.py): on by default on glibc, off on request."""

import os
import subprocess
import sys

import pytest

PROBE = "import ember._memory as m; print(m.malloc_tuned())"


def _run(probe, env_value):
    """``probe``'s output in a fresh interpreter, ``EMBER_MALLOC_TUNING`` set to ``env_value`` (None: unset)."""
    env = dict(os.environ)
    env.pop("EMBER_MALLOC_TUNING", None)
    if env_value is not None:
        env["EMBER_MALLOC_TUNING"] = env_value
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _tuned(env_value):
    return _run(PROBE, env_value)


@pytest.mark.skipif(not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"), reason="glibc only")
def test_malloc_tuned_by_default_on_glibc():
    assert _tuned(None) == "True"


@pytest.mark.parametrize("value", ["0", "off"])
def test_malloc_tuning_opt_out(value):
    assert _tuned(value) == "False"


GC_PROBE = (
    "import gc, weakref; import ember; n = gc.get_freeze_count()\n"
    "class Cycle: pass\n"
    "a = Cycle(); a.me = a; r = weakref.ref(a); del a; gc.collect()\n"
    "b = Cycle(); b.me = b; rb = weakref.ref(b); del b\n"
    "keep = [[] for _ in range(2 * gc.get_threshold()[0])]\n"  # enough allocations for a collection, no explicit one
    "print(n > 1000, r() is None, rb() is None, gc.get_threshold()[0])"
)


def _gc_probe(env_value, before=""):
    env = dict(os.environ)
    env.pop("EMBER_GC_FREEZE", None)
    if env_value is not None:
        env["EMBER_GC_FREEZE"] = env_value
    cmd = [sys.executable, "-c", before + GC_PROBE]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout


def test_import_freezes_the_objects_it_made_and_later_cycles_are_still_collected():
    # the first threshold is raised from Python's 700; cycles are still collected, explicitly and automatically
    assert _gc_probe(None).split() == ["True", "True", "True", "10000"]


def test_gc_freeze_opt_out():
    assert _gc_probe("0").split() == ["False", "True", "True", "700"]


def test_a_threshold_the_program_chose_is_kept():
    assert _gc_probe(None, before="import gc; gc.set_threshold(1234, 10, 10)\n").split()[-1] == "1234"


MAPPED_PROBE = (
    "import ctypes, numpy as np, ember\n"
    "class Info(ctypes.Structure):\n"
    "    _fields_ = [(n, ctypes.c_size_t) for n in 'arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks"
    " fordblks keepcost'.split()]\n"
    "info = ctypes.CDLL('libc.so.6').mallinfo2\n"
    "info.restype = Info\n"
    "a = np.ones((4096, 2048), np.float32)\n"  # 32 MiB + malloc's header: above glibc's largest mmap threshold
    "print(info().hblkhd >> 20)"
)


def _glibc() -> tuple[int, ...]:
    name, _, version = (os.confstr("CS_GNU_LIBC_VERSION") or "").partition(" ")
    return tuple(int(v) for v in version.split(".")[:2]) if name == "glibc" else ()


@pytest.mark.skipif(_glibc() < (2, 33), reason="glibc >= 2.33 (mallinfo2)")
@pytest.mark.parametrize("env_value", [None, "0"])
def test_large_temporaries_come_from_the_heap_not_fresh_mappings(env_value):
    # a transformer's (4096, 2048) float32 temporaries: fresh mappings (faulted in every step) unless tuned
    mapped_mib = int(_run(MAPPED_PROBE, env_value))
    assert mapped_mib == 0 if env_value is None else mapped_mib >= 32
