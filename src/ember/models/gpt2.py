"""Hugging Face GPT-2 with its module names and state-dict keys (``transformer.h.0.attn.c_attn.weight``, ...):
``ember.models.gpt2.from_pretrained(dir)`` reads a folder saved by ``transformers`` (``config.json`` +
``model.safetensors``) without transformers or torch.

>>> model = ember.models.gpt2.from_pretrained("gpt2")          # a local folder
>>> logits = model(ember.tensor([[464, 3290, 318]]))           # (1, 3, vocab_size)
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

from .._creation import arange, ones, randn, zeros
from .._tensor import Tensor
from ..nn import Dropout, Embedding, LayerNorm, Linear, Module, ModuleList, Param
from ..nn import functional as F
from ..ops import tril
from ._hf import activation, read_config, read_weights, reject
from ._weights import load_checked

__all__ = ["Conv1D", "GPT2Config", "GPT2LMHeadModel", "GPT2Model", "from_pretrained"]


@dataclasses.dataclass
class GPT2Config:
    """The fields of a transformers ``GPT2Config`` that shape the network."""

    vocab_size: int = 50257
    n_positions: int = 1024
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: int | None = None
    activation_function: str = "gelu_new"
    layer_norm_epsilon: float = 1e-5
    scale_attn_weights: bool = True
    scale_attn_by_inverse_layer_idx: bool = False
    tie_word_embeddings: bool = True
    embd_pdrop: float = 0.1
    attn_pdrop: float = 0.1
    resid_pdrop: float = 0.1

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GPT2Config:
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})


class Conv1D(Module):
    """transformers' ``Conv1D``: a linear layer with the weight stored (in_features, out_features)."""

    def __init__(self, nf: int, nx: int) -> None:
        super().__init__()
        self.weight = Param(randn(nx, nf) * 0.02)
        self.bias = Param(zeros(nf))

    def forward(self, x: Tensor) -> Tensor:
        return x @ self.weight + self.bias  # type: ignore[no-any-return]


class GPT2Attention(Module):
    def __init__(self, c: GPT2Config, layer_idx: int) -> None:
        super().__init__()
        self.n_head, self.n_embd = c.n_head, c.n_embd
        self.c_attn = Conv1D(3 * c.n_embd, c.n_embd)
        self.c_proj = Conv1D(c.n_embd, c.n_embd)
        self.attn_dropout, self.resid_dropout = Dropout(c.attn_pdrop), Dropout(c.resid_pdrop)
        head = c.n_embd // c.n_head
        self.scale = (1.0 / math.sqrt(head) if c.scale_attn_weights else 1.0) / (
            layer_idx + 1 if c.scale_attn_by_inverse_layer_idx else 1)  # fmt: skip

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        b, t, e = x.shape
        q, k, v = (z.reshape(b, t, self.n_head, e // self.n_head).transpose(1, 2)
                   for z in self.c_attn(x).split(self.n_embd, dim=2))  # fmt: skip
        p = self.attn_dropout.p if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, scale=self.scale)
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).reshape(b, t, e)))  # type: ignore[no-any-return]


class GPT2MLP(Module):
    def __init__(self, c: GPT2Config, act: Any) -> None:
        super().__init__()
        inner = c.n_inner or 4 * c.n_embd
        self.c_fc, self.c_proj = Conv1D(inner, c.n_embd), Conv1D(c.n_embd, inner)
        self.act, self.dropout = act, Dropout(c.resid_pdrop)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))  # type: ignore[no-any-return]


class GPT2Block(Module):
    def __init__(self, c: GPT2Config, layer_idx: int, act: Any) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.attn = GPT2Attention(c, layer_idx)
        self.ln_2 = LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.mlp = GPT2MLP(c, act)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x), mask)
        return x + self.mlp(self.ln_2(x))  # type: ignore[no-any-return]


class GPT2Model(Module):
    """Token and position embeddings, the blocks ``h``, the final ``ln_f``: hidden states (B, T, n_embd)."""

    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.config = config
        act = activation(config.activation_function, "GPT2Config", "ember.models.gpt2")
        self.wte = Embedding(config.vocab_size, config.n_embd)
        self.wpe = Embedding(config.n_positions, config.n_embd)
        self.drop = Dropout(config.embd_pdrop)
        self.h = ModuleList([GPT2Block(config, i, act) for i in range(config.n_layer)])
        self.ln_f = LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """``attention_mask`` (B, T): 1 for tokens to attend to, 0 for padding."""
        t = input_ids.shape[-1]
        if t > self.config.n_positions:
            raise ValueError(f"GPT2Model: sequence length {t} exceeds n_positions {self.config.n_positions}")
        allowed = tril(ones(t, t, device=input_ids.device))
        if attention_mask is not None:
            allowed = allowed * attention_mask.float()[:, None, None, :]
        mask = (1.0 - allowed) * _MIN  # additive, as transformers does: a fully masked row stays finite
        x = self.drop(self.wte(input_ids) + self.wpe(arange(t, device=input_ids.device)))
        for block in self.h:
            x = block(x, mask)
        return self.ln_f(x)  # type: ignore[no-any-return]


class GPT2LMHeadModel(Module):
    """GPT-2 with its language-model head (tied to the token embedding unless the config unties it): logits."""

    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.config = config
        self.transformer = GPT2Model(config)
        if not config.tie_word_embeddings:
            self.lm_head = Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        h = self.transformer(input_ids, attention_mask)
        head = self.lm_head.weight if "lm_head" in self._modules else self.transformer.wte.weight
        return F.linear(h, head)


_MIN = -3.4028234663852886e38  # float32's lowest value

_BUFFERS = (".attn.bias", ".attn.masked_bias")  # causal-mask buffers older transformers saved


def from_pretrained(directory: str | Path) -> GPT2LMHeadModel | GPT2Model:
    """A GPT-2 saved by ``transformers`` (``save_pretrained``) in ``directory``, in eval mode: a
    ``GPT2LMHeadModel`` (logits) or, for a ``GPT2Model`` checkpoint, the hidden states."""
    raw = read_config(directory, ("gpt2",), "ember.models.gpt2")
    reject(raw, str(directory), "ember.models.gpt2", add_cross_attention=False, reorder_and_upcast_attn=False)
    config = GPT2Config.from_dict(raw)
    state, source = read_weights(directory)
    state = {k: v for k, v in state.items() if not k.endswith(_BUFFERS)}
    bare = not any(k.startswith("transformer.") for k in state)
    if "GPT2Model" in (raw.get("architectures") or []) or (bare and "lm_head.weight" not in state):
        model: Any = GPT2Model(config)
        state = {k.removeprefix("transformer."): v for k, v in state.items()}
    else:
        model = GPT2LMHeadModel(config)
        state = {k if k.startswith(("transformer.", "lm_head.")) else f"transformer.{k}": v for k, v in state.items()}
        if config.tie_word_embeddings:
            state.pop("lm_head.weight", None)  # the same array as transformer.wte.weight
    load_checked(model, state, source)
    return model.eval()  # type: ignore[no-any-return]
