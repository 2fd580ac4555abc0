"""Timing and table helpers shared by the benchmark scripts."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_of(fn: Callable[[], object], repeat: int = 5, number: int = 1) -> float:
    """The best mean time of ``number`` calls over ``repeat`` rounds (one warm-up call first)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def torch_or_none() -> Any:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(2)
    return torch


def table(rows: list[tuple[str, float, float]], note: str) -> None:
    """Print (name, ember, torch) rows with the ratio ember/torch."""
    print(f"{'benchmark':40s} {'ember':>12s} {'torch':>12s} {'ember/torch':>12s}")
    for name, e, t in rows:
        print(f"{name:40s} {e:12.4g} {t:12.4g} {e / t if t == t and t else float('nan'):12.2f}")
    print(note)
