"""Argument types shared by the command lines (``ember.cli``, ``ember.pnnx``): checked numbers."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

__all__ = ["number_arg"]


def number_arg(kind: type, low: float, strict: bool = False) -> Callable[[str], Any]:
    """An argparse type: a ``kind`` (int or float) that is >= ``low`` (> ``low`` when ``strict``) and finite."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {'an integer' if kind is int else 'a number'} (got {text!r})"
                                             ) from None  # fmt: skip
        if kind is float and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number (got {text})")
        if value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {low:g} (got {text})")
        return value

    parse.__name__ = kind.__name__
    return parse
