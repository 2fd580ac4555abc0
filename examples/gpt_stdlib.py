"""A small GPT (nanoGPT's architecture) trained on a text that ships with Python, written as a PyTorch program.

    python examples/gpt_stdlib.py                          # Ember, on the source of Python's `this` module
    python examples/gpt_stdlib.py --lib torch              # the same program on PyTorch
    python examples/gpt_stdlib.py --module textwrap --steps 2000 --n-layer 4 --n-embd 128

The program uses only PyTorch's API (``torch.nn``, ``F.scaled_dot_product_attention``-free attention
with ``qkv.split(...)`` and ``.view(B, T, nh, hs)`` on the non-contiguous split, AdamW with weight
decay groups, gradient clipping, ``torch.multinomial`` sampling); ``--lib`` picks the library that
runs it. ``--compile`` wraps the model in ``torch.compile`` when the library has it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import math
import time
from pathlib import Path
from typing import Any


def stdlib_text(module: str) -> str:
    """The text to learn: the Zen of Python for ``this`` (the module's own text, decoded), else a module's source."""
    if module == "this":
        with contextlib.redirect_stdout(io.StringIO()):
            this = importlib.import_module("this")
        return "".join(this.d.get(c, c) for c in this.s)  # type: ignore[attr-defined]
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise SystemExit(f"no module {module!r} with a source file")
    return Path(spec.origin).read_text()


def build(torch: Any, vocab: int, block: int, n_layer: int, n_head: int, n_embd: int, dropout: float) -> Any:
    """nanoGPT's model for the library ``torch`` (PyTorch or Ember: the code is the same)."""
    nn, F = torch.nn, torch.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.attn_dropout, self.resid_dropout = nn.Dropout(dropout), nn.Dropout(dropout)
            self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

        def forward(self, x: Any) -> Any:
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)  # a view of a non-contiguous split
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = self.attn_dropout(F.softmax(att, dim=-1))
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(n_embd), CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd),
                                     nn.Dropout(dropout))  # fmt: skip

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block, n_embd)
            self.drop = nn.Dropout(dropout)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.wte.weight = self.lm_head.weight  # weight tying
            self.apply(self._init_weights)

        def _init_weights(self, module: Any) -> None:
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx: Any, targets: Any = None) -> Any:
            t = idx.size(1)
            pos = torch.arange(0, t, dtype=torch.long)
            x = self.drop(self.wte(idx) + self.wpe(pos))
            for blk in self.h:
                x = blk(x)
            logits = self.lm_head(self.ln_f(x))
            if targets is None:
                return logits, None
            return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

        @torch.no_grad()
        def generate(self, idx: Any, n: int, temperature: float = 1.0) -> Any:
            for _ in range(n):
                logits, _ = self(idx[:, -block:])
                probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
                idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
            return idx

    return GPT()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lib", default="ember", choices=["ember", "torch"], help="the library that runs the program")
    p.add_argument("--module", default="this", help="the standard-library module whose text is learned")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=32)
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--generate", type=int, default=200)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--compile", action="store_true", help="torch.compile the model (when the library has it)")
    args = p.parse_args(argv)
    torch = importlib.import_module(args.lib)
    torch.manual_seed(args.seed)

    text = stdlib_text(args.module)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    n = int(0.9 * len(data))
    splits = {"train": data[:n], "val": data[n:]}
    block = min(args.block_size, len(splits["val"]) - 1)

    def get_batch(split: str) -> tuple[Any, Any]:
        d = splits[split]
        ix = torch.randint(len(d) - block, (args.batch_size,))
        x = torch.stack([d[i : i + block] for i in ix.tolist()])
        y = torch.stack([d[i + 1 : i + 1 + block] for i in ix.tolist()])
        return x, y

    model = build(torch, len(chars), block, args.n_layer, args.n_head, args.n_embd, args.dropout)
    step_model = model
    if args.compile and hasattr(torch, "compile"):  # Ember's compile (issue: ember.compile) once it exists
        step_model = torch.compile(model)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))  # fmt: skip

    @torch.no_grad()
    def estimate(split: str, iters: int = 5) -> float:
        model.eval()
        losses = [model(*get_batch(split))[1].item() for _ in range(iters)]
        model.train()
        return sum(losses) / len(losses)

    first = estimate("val")
    t0 = time.time()
    losses = []
    for step in range(1, args.steps + 1):
        x, y = get_batch("train")
        _, loss = step_model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if args.eval_every and step % args.eval_every == 0:
            print(f"step {step:5d}  train {losses[-1]:.4f}  val {estimate('val'):.4f}  ({time.time() - t0:.1f} s)")
    last = estimate("val")
    model.eval()
    start = torch.tensor([[stoi[text[0]]]], dtype=torch.long)
    sample = "".join(chars[i] for i in model.generate(start, args.generate)[0].tolist())
    print(f"{args.lib}: val loss {first:.3f} -> {last:.3f} on {len(text)} characters of `{args.module}`\n{sample}")
    return {"first_val": first, "val": last, "train": losses, "sample": sample, "vocab": len(chars)}


if __name__ == "__main__":
    main()
