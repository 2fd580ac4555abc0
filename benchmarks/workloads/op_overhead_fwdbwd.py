"""Per-op overhead, forward + backward: a chain of 1,000 ops on shape (8,) recorded and differentiated;
ms per chain = µs per op."""

from _chain import N_OPS, chain_step
from _harness import parse, report

if __name__ == "__main__":
    args = parse("op_overhead_fwdbwd")
    report("op_overhead_fwdbwd", args, chain_step(args, backward=True), unit="ms", per_step=N_OPS / 1000)
