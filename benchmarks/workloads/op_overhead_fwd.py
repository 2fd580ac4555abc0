"""Per-op overhead, forward only: a chain of 1,000 ops on shape (8,), no grad; ms per chain = µs per op."""

from _chain import N_OPS, chain_step
from _harness import parse, report

if __name__ == "__main__":
    args = parse("op_overhead_fwd")
    report("op_overhead_fwd", args, chain_step(args, backward=False), unit="ms", per_step=N_OPS / 1000)
