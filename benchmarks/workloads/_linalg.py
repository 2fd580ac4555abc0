"""Decompositions of one 512x512 matrix and of a batch of 1,024 8x8 matrices (issue 25's speed targets).

Both frameworks call LAPACK-class kernels; the difference measured is the overhead around them (layout, copies,
the batch loop, the result tensors). Forward only, no grad; ms per call.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from _harness import framework, parse, report

SHAPES = {"512": (512, 512), "batch8": (1024, 8, 8)}


def decomp_step(args: argparse.Namespace, op: str, shape: tuple[int, ...]) -> Callable[[], Any]:
    lib = framework(args)
    lib.manual_seed(0)
    a = lib.randn(*shape, dtype=lib.float32)
    if op == "eigh":
        a = a + a.transpose(-1, -2)
    if args.device == "cuda":
        a = a.to("cuda")
    fn = {"svd": lambda: lib.linalg.svd(a, full_matrices=False), "qr": lambda: lib.linalg.qr(a),
          "eigh": lambda: lib.linalg.eigh(a)}[op]  # fmt: skip

    def step() -> Any:
        with lib.no_grad():
            return fn()

    return step


def main(op: str, size: str) -> None:
    name = f"linalg_{op}_{size}"
    args = parse(name)
    report(name, args, decomp_step(args, op, SHAPES[size]), unit="ms", per_step=1)
