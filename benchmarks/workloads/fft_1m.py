"""FFT of 2^20 float32 samples (a complex spectrum, as ``fft.fft`` of a real signal gives): ms per transform."""

import numpy as np
from _harness import framework, parse, report

if __name__ == "__main__":
    args = parse("fft_1m")
    lib = framework(args)
    x = lib.from_numpy(np.random.default_rng(0).standard_normal(2**20).astype(np.float32))
    if args.device == "cuda":
        x = x.to("cuda")
    report("fft_1m", args, lambda: lib.fft.fft(x), unit="ms", per_step=1)
