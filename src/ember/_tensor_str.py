"""``ember._tensor_str`` (PyTorch's ``torch._tensor_str``): the print options as libraries reach them.

``printoptions(**kwargs)`` changes them for a block (sentence-transformers' model cards print embeddings in one);
``get_printoptions``/``set_printoptions`` are ``_printing.py``'s. The format itself is Ember's (``_printing.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ._printing import get_printoptions, set_printoptions

__all__ = ["get_printoptions", "printoptions", "set_printoptions"]


@contextlib.contextmanager
def printoptions(**kwargs: Any) -> Iterator[None]:
    """``set_printoptions(**kwargs)`` for the block; the options before it come back after it (also on error)."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)
