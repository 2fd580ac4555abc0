"""NumPy's OpenBLAS beside Ember's kernel threads (``backends/_blas_threads.py``): importing Ember shortens the
spin of OpenBLAS's idle threads, leaves products' bits and the thread setting as they were, keeps a user's own
spin, and a forked child still runs threaded products. Each case runs in a fresh process (the spin is set once,
when Ember is imported)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

_PRODUCT = """
import numpy as np
rng = np.random.default_rng(0)
a, b = rng.standard_normal((300, 200)), rng.standard_normal((200, 400))  # threaded by OpenBLAS on 2+ threads
before = (a @ b).tobytes()
"""


def _run(code: str, **env: str) -> dict:
    full = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")}
    full.update(env)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full,
                         timeout=120, check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not result.get("openblas"):
        pytest.skip("NumPy's BLAS here is not an OpenBLAS with a settable spin")
    return result


def test_import_shortens_the_spin_and_keeps_products_threads_and_forks():
    r = _run(
        _PRODUCT
        + """
import json, multiprocessing, os
import ember
from ember.backends import _blas_threads as bt
from ember.backends._kernels_threads import kernel_threads
get = (bt._find() or (None,))[0]
after = (a @ b).tobytes()
ember.set_num_threads(3)

def child(q):
    q.put((a @ b).tobytes() == after)  # a threaded product in a forked child (OpenBLAS restarts its threads)

ctx = multiprocessing.get_context("fork")
q = ctx.Queue()
p = ctx.Process(target=child, args=(q,))
p.start()
p.join(60)
print(json.dumps({"openblas": bt.spin_log2() is not None and get is not None, "spin": bt.spin_log2(),
                  "again": bt.shorten_spin(), "env": "OPENBLAS_THREAD_TIMEOUT" in os.environ,
                  "same": before == after, "threads": [get(), kernel_threads()], "child": p.exitcode == 0 and q.get()}))
""",
        OPENBLAS_NUM_THREADS="2",  # two OpenBLAS threads whatever the machine: the product is split
    )
    assert r["spin"] == 22 and r["again"] is True  # set once; asking again changes nothing
    assert r["env"] is False  # the variable used to pass the spin to OpenBLAS is not left for other programs
    assert r["same"] is True  # OpenBLAS's threads restarted: the same bits as before
    assert r["threads"] == [3, 3]  # ember.set_num_threads still reaches OpenBLAS and the kernels
    assert r["child"] is True


def test_a_users_spin_and_one_thread_are_kept():
    code = """
import json
import ember
from ember.backends import _blas_threads as bt
from ember.backends._kernels_threads import kernel_threads
print(json.dumps({"openblas": bt.spin_log2() is not None and bool(bt._find()), "spin": bt.spin_log2(),
                  "done": bt.shorten_spin(), "threads": [bt._find()[0](), kernel_threads()]}))
"""
    r = _run(code, OPENBLAS_THREAD_TIMEOUT="25", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    assert r["spin"] == 25 and r["done"] is False  # the user's own spin
    assert r["threads"] == [1, 1]  # compare.py --threads 1: one thread for OpenBLAS and for the kernels
