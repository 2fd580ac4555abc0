"""ViT-B/16 with torchvision's module names and state-dict keys (``class_token``, ``conv_proj.weight``,
``encoder.layers.encoder_layer_0.self_attention.in_proj_weight``, ``heads.head.bias``); ``weights=PATH``
loads a torchvision ``.pth`` file."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

from .._creation import zeros
from .._tensor import Tensor
from ..nn import GELU, Conv2d, Dropout, LayerNorm, Linear, Module, MultiheadAttention, Param, Sequential
from ..ops import cat
from ._weights import load_weights_file

__all__ = ["VisionTransformer", "vit_b_16"]


class MLPBlock(Sequential):
    """Linear, GELU, dropout, linear, dropout (numbered as torchvision's)."""

    def __init__(self, dim: int, mlp_dim: int, dropout: float) -> None:
        super().__init__(Linear(dim, mlp_dim), GELU(), Dropout(dropout), Linear(mlp_dim, dim), Dropout(dropout))


class EncoderBlock(Module):
    """Pre-norm transformer block: attention then MLP, each with a residual connection."""

    def __init__(self, num_heads: int, hidden_dim: int, mlp_dim: int, dropout: float, attention_dropout: float
                 ) -> None:  # fmt: skip
        super().__init__()
        self.ln_1 = LayerNorm(hidden_dim, eps=1e-6)
        self.self_attention = MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout, batch_first=True)
        self.dropout = Dropout(dropout)
        self.ln_2 = LayerNorm(hidden_dim, eps=1e-6)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input: Tensor) -> Tensor:
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))  # type: ignore[no-any-return]


class Encoder(Module):
    """Learned position embeddings, the blocks (``encoder_layer_{i}``), a final LayerNorm."""

    def __init__(self, seq_length: int, num_layers: int, num_heads: int, hidden_dim: int, mlp_dim: int,
                 dropout: float, attention_dropout: float) -> None:  # fmt: skip
        super().__init__()
        from .. import nn

        self.pos_embedding = Param(zeros(1, seq_length, hidden_dim))
        nn.init.normal_(self.pos_embedding, std=0.02)
        self.dropout = Dropout(dropout)
        self.layers = Sequential(OrderedDict(
            (f"encoder_layer_{i}", EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout))
            for i in range(num_layers)))  # fmt: skip
        self.ln = LayerNorm(hidden_dim, eps=1e-6)

    def forward(self, input: Tensor) -> Tensor:
        return self.ln(self.layers(self.dropout(input + self.pos_embedding)))  # type: ignore[no-any-return]


class VisionTransformer(Module):
    """Vision Transformer (Dosovitskiy et al. 2021): ``patch_size`` patches of an ``image_size`` image, a class
    token, ``num_layers`` encoder blocks, and a linear head on the class token."""

    def __init__(self, image_size: int, patch_size: int, num_layers: int, num_heads: int, hidden_dim: int,
                 mlp_dim: int, dropout: float = 0.0, attention_dropout: float = 0.0,
                 num_classes: int = 1000) -> None:  # fmt: skip
        super().__init__()
        if image_size % patch_size:
            raise ValueError(
                f"VisionTransformer: image_size {image_size} must be a multiple of patch_size {patch_size}"
            )
        self.image_size, self.patch_size, self.hidden_dim = image_size, patch_size, hidden_dim
        self.conv_proj = Conv2d(3, hidden_dim, patch_size, patch_size)
        self.class_token = Param(zeros(1, 1, hidden_dim))
        seq_length = (image_size // patch_size) ** 2 + 1
        self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout)
        self.heads = Sequential(OrderedDict(head=Linear(hidden_dim, num_classes)))

    def forward(self, x: Tensor) -> Tensor:
        n, _, h, w = x.shape
        if (h, w) != (self.image_size, self.image_size):
            raise ValueError(f"VisionTransformer: expected {self.image_size}x{self.image_size} images, got {h}x{w}")
        x = self.conv_proj(x).reshape(n, self.hidden_dim, -1).permute(0, 2, 1)
        x = cat([self.class_token.expand(n, -1, -1), x], 1)
        return self.heads(self.encoder(x)[:, 0])  # type: ignore[no-any-return]


def vit_b_16(num_classes: int = 1000, *, weights: str | Path | None = None, image_size: int = 224,
             **kw: Any) -> VisionTransformer:  # fmt: skip
    """ViT-B/16 (16x16 patches, 12 layers, 12 heads, width 768); ``weights``: a torchvision ``.pth`` file to load."""
    model = VisionTransformer(image_size, 16, 12, 12, 768, 3072, num_classes=num_classes, **kw)
    return load_weights_file(model, weights) if weights is not None else model  # type: ignore[no-any-return]
