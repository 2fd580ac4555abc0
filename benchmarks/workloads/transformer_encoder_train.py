"""``nn.TransformerEncoder`` training step: 6 post-norm layers (d_model 512, 8 heads, feed-forward 2048, ReLU,
dropout 0.1), batch 16 of 256 tokens (sequence-first), MSE loss against a random target, Adam: samples/s.

A step is about 0.5 TFLOP (several seconds on 2 cores), so the timing is short: one warm-up step and three
timed rounds of one step each (``report(warmup=1, rounds=3)``); the issue's sizes are kept.
"""

from typing import Any

from _harness import framework, parse, report

BATCH, TOKENS, D_MODEL, HEADS, LAYERS = 16, 256, 512, 8, 6


def encoder_step(args: Any) -> Any:
    lib = framework(args)
    lib.manual_seed(0)
    nn, dev = lib.nn, args.device
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(D_MODEL, HEADS), LAYERS, enable_nested_tensor=False)
    model = model.to(dev)
    opt = lib.optim.Adam(model.parameters(), lr=1e-4)
    x = lib.randn(TOKENS, BATCH, D_MODEL, device=dev)
    y = lib.randn(TOKENS, BATCH, D_MODEL, device=dev)
    mse_loss = nn.functional.mse_loss

    def step() -> None:
        opt.zero_grad()
        mse_loss(model(x), y).backward()
        opt.step()

    return step


if __name__ == "__main__":
    args = parse("transformer_encoder_train")
    report("transformer_encoder_train", args, encoder_step(args), unit="samples/s", per_step=BATCH, rounds=3,
           warmup=1)  # fmt: skip
