"""``fft.rfft`` of a batch of 64 float32 signals of 4,096 samples (along the last dim): ms per batch."""

import numpy as np
from _harness import framework, parse, report

if __name__ == "__main__":
    args = parse("rfft_batch")
    lib = framework(args)
    x = lib.from_numpy(np.random.default_rng(0).standard_normal((64, 4096)).astype(np.float32))
    if args.device == "cuda":
        x = x.to("cuda")
    report("rfft_batch", args, lambda: lib.fft.rfft(x), unit="ms", per_step=1)
