"""One BLAS thread around a kernel's small matrix products, on NumPy's OpenBLAS.

OpenBLAS splits even a (97, 51) x (51, 204) product over all its threads; MKL (PyTorch's BLAS) keeps
products that small on one. On this project's 2-core machine, loaded by neighbours, the recurrent step's
products on OpenBLAS's default 2 threads made the LSTM workload 2-6x slower than on one (threads waiting for
a busy core at every product; ``benchmarks/README.md``). ``one_blas_thread`` sets OpenBLAS to one thread for
the ``with`` block and restores the count after (nested and concurrent blocks share one saved count). It
does nothing without ``threadpoolctl`` (which finds the library) or for another BLAS.
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_fns: tuple[Any, ...] | None = None  # (get, set) of NumPy's OpenBLAS, or () when not available
_depth = 0
_saved = 1


def _find() -> tuple[Any, ...]:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return ()
    for lib in ThreadpoolController().lib_controllers:
        if lib.internal_api != "openblas" or "numpy" not in str(lib.filepath):
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", ""):
                get = getattr(lib.dynlib, f"{prefix}_get_num_threads{suffix}", None)
                put = getattr(lib.dynlib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    return get, put
    return ()


class _OneBlasThread:
    def __enter__(self) -> None:
        global _fns, _depth, _saved
        with _lock:
            if _fns is None:
                _fns = _find()
            if _fns:
                if _depth == 0:
                    _saved = _fns[0]()
                    if _saved > 1:
                        _fns[1](1)
                _depth += 1

    def __exit__(self, *exc: object) -> None:
        global _depth
        with _lock:
            if _fns:
                _depth -= 1
                if _depth == 0 and _saved > 1:
                    _fns[1](_saved)


one_blas_thread = _OneBlasThread()
