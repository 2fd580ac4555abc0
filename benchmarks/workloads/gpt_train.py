"""A small GPT training step: Ember's ``ember.models.GPT`` (2 layers, 128-dim, 4 heads, context 64, vocabulary
256, pre-norm causal blocks, tied head) and the same model in plain torch; batch 32, cross-entropy on the next
token, AdamW: samples/s."""

from typing import Any

from _harness import framework, parse, report

BATCH, CONTEXT, VOCAB, DIM, HEADS, LAYERS = 32, 64, 256, 128, 4, 2


def torch_gpt() -> Any:
    """``ember.models.GPT``'s layers, names and forward in plain torch."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
            self.c_attn, self.c_proj = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
            self.c_fc, self.mlp_proj = nn.Linear(DIM, 4 * DIM), nn.Linear(4 * DIM, DIM)
            self.drop = nn.Dropout(0.0)

        def forward(self, x: Any) -> Any:
            b, t, e = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).chunk(3, -1)
            q, k, v = (z.reshape(b, t, HEADS, e // HEADS).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.drop(self.c_proj(y.transpose(1, 2).reshape(b, t, e)))
            return x + self.drop(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)))))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(VOCAB, DIM), nn.Embedding(CONTEXT, DIM)
            self.drop = nn.Dropout(0.0)
            self.h = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.ln_f = nn.LayerNorm(DIM)

        def forward(self, idx: Any) -> Any:
            t = idx.shape[-1]
            x = self.drop(self.wte(idx) + self.wpe(torch.arange(t, device=idx.device)))
            for block in self.h:
                x = block(x)
            return F.linear(self.ln_f(x), self.wte.weight)

    return GPT()


def gpt_step(args: Any) -> Any:
    lib = framework(args)
    lib.manual_seed(0)
    dev = args.device
    if args.framework == "ember":
        from ember.models import GPTConfig

        model = GPTConfig(vocab_size=VOCAB, block_size=CONTEXT, n_layer=LAYERS, n_head=HEADS, n_embd=DIM).init(
            device=dev
        )
    else:
        model = torch_gpt().to(dev)
    opt = lib.optim.AdamW(model.parameters(), lr=3e-4)
    tokens = lib.randint(0, VOCAB, (BATCH, CONTEXT + 1), device=dev)
    x, y = tokens[:, :-1], tokens[:, 1:]
    cross_entropy = lib.nn.functional.cross_entropy

    def step() -> None:
        opt.zero_grad()
        cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1)).backward()
        opt.step()

    return step


if __name__ == "__main__":
    args = parse("gpt_train")
    report("gpt_train", args, gpt_step(args), unit="samples/s", per_step=BATCH)
