"""A 4096x4096 float32 matrix product: TFLOP/s (2 * 4096**3 floating-point operations per product)."""

from _gpu import GEMM_N, gemm_step
from _harness import parse, report

if __name__ == "__main__":
    args = parse("gemm_4096")
    report("gemm_4096", args, gemm_step(args), unit="TFLOP/s", per_step=2 * GEMM_N**3 / 1e12)
