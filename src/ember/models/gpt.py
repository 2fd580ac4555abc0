"""A small GPT-style decoder: token + position embeddings, pre-norm causal blocks, tied output head."""

from __future__ import annotations

from typing import Any

from .._creation import arange
from .._tensor import Tensor
from ..nn import Dropout, Embedding, LayerNorm, Linear, Module, ModuleList
from ..nn import functional as F
from ..nn.config import Config
from ..nn.functional._dropout_ops import release_values
from ..nn.transformer import residual


class GPTConfig(Config):
    vocab_size: int = 256
    block_size: int = 64
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 64
    dropout: float = 0.0

    def validate(self) -> None:
        for k in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            if getattr(self, k) <= 0:
                raise ValueError(f"GPTConfig: {k} must be positive, got {getattr(self, k)}")
        if self.n_embd % self.n_head:
            raise ValueError(f"GPTConfig: n_embd {self.n_embd} must be divisible by n_head {self.n_head}")

    def init(self, device: Any = None, dtype: Any = None) -> GPT:
        return GPT(self, device=device, dtype=dtype)


class Block(Module):
    def __init__(self, c: GPTConfig, **kw: Any) -> None:
        super().__init__()
        self.n_head = c.n_head
        self.ln_1 = LayerNorm(c.n_embd, **kw)
        self.c_attn = Linear(c.n_embd, 3 * c.n_embd, **kw)
        self.c_proj = Linear(c.n_embd, c.n_embd, **kw)
        self.ln_2 = LayerNorm(c.n_embd, **kw)
        self.c_fc = Linear(c.n_embd, 4 * c.n_embd, **kw)
        self.mlp_proj = Linear(4 * c.n_embd, c.n_embd, **kw)
        self.drop = Dropout(c.dropout)

    def forward(self, x: Tensor) -> Tensor:
        b, t, e = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).chunk(3, -1)
        h = self.n_head
        q, k, v = (z.reshape(b, t, h, e // h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = residual(x, self.c_proj(_merge_heads(y)), self.drop)
        return residual(x, self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)))), self.drop)


def _merge_heads(y: Tensor) -> Tensor:
    """(B, h, T, d) -> (B, T, h * d); when that is a copy, the graph need not keep ``y`` for it."""
    b, h, t, d = y.shape
    perm = y.transpose(1, 2)
    out = perm.reshape(b, t, h * d)
    if out._view is None:
        release_values(out, 0)
        release_values(perm, 0)
    return out


class GPT(Module):
    def __init__(self, config: GPTConfig, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.config = config
        kw = {"device": device, "dtype": dtype}
        self.wte = Embedding(config.vocab_size, config.n_embd, **kw)
        self.wpe = Embedding(config.block_size, config.n_embd, **kw)
        self.drop = Dropout(config.dropout)
        self.h = ModuleList([Block(config, **kw) for _ in range(config.n_layer)])
        self.ln_f = LayerNorm(config.n_embd, **kw)

    def forward(self, idx: Tensor) -> Tensor:
        """Logits (B, T, vocab) for token ids (B, T); the output head shares the token embedding."""
        t = idx.shape[-1]
        if t > self.config.block_size:
            raise ValueError(f"GPT: sequence length {t} exceeds block_size {self.config.block_size}")
        x = self.drop(self.wte(idx) + self.wpe(arange(t, device=idx.device)))
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)
