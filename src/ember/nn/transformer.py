"""Attention, transformer layers and their stacks (Transformer, TransformerEncoder/Decoder) with PyTorch's
parameter names and state_dict keys."""

from __future__ import annotations

import copy
import math
from typing import Any

from .._creation import empty, full, zeros
from .._errors import ShapeError
from .._tensor import Tensor
from ..ops._other_diagonal import triu
from . import functional as F
from . import init
from ._encoder_padding import nested_ok, padded_positions
from ._module_hooks import GLOBAL_FWD, GLOBAL_PRE
from .activation import ReLU, get_activation
from .config import config_for
from .container import ModuleList
from .functional._dropout_ops import dropout_add, relu_dropout
from .layers import Dropout
from .linear import Linear
from .module import Module
from .norm import LayerNorm
from .parameter import Param

__all__ = [
    "MultiheadAttention", "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
    "TransformerEncoderLayer",
]  # fmt: skip


def _check_masks(attn: Any, query: Tensor, key: Tensor, mask: Any, kpm: Any, names: tuple[str, str]) -> None:
    """Masks of the shapes attention needs, or an error naming the mask (``tgt_mask``...) and its expected shape."""
    if query.ndim not in (2, 3) or key.ndim != query.ndim:
        raise ShapeError(f"MultiheadAttention: query {tuple(query.shape)} and key {tuple(key.shape)} must both be "
                         "(L, N, E) (batch_first: (N, L, E)) or unbatched (L, E)")  # fmt: skip
    unbatched = query.ndim == 2
    seq = 1 if attn.batch_first and not unbatched else 0
    L, S = query.shape[seq], key.shape[seq]
    N = 1 if unbatched else query.shape[1 - seq]
    if mask is not None:
        want = {2: (L, S), 3: (N * attn.num_heads, L, S)}.get(mask.ndim)
        if want is None or tuple(mask.shape) != want:
            raise ShapeError(f"{names[0]} has shape {tuple(mask.shape)} but should be {(L, S)} or "
                             f"{(N * attn.num_heads, L, S)} (target length {L}, source length {S}, batch {N} x "
                             f"{attn.num_heads} heads)")  # fmt: skip
    if kpm is not None:
        want = (S,) if unbatched else (N, S)
        if tuple(kpm.shape) != want:
            raise ShapeError(f"{names[1]} has shape {tuple(kpm.shape)} but should be {want} (batch, source length)")


class MultiheadAttention(Module):
    """Multi-head attention with PyTorch's parameters (``in_proj_weight`` (3E, E), or ``q/k/v_proj_weight`` when
    ``kdim``/``vdim`` differ from E; ``in_proj_bias``; ``bias_k``/``bias_v``; ``out_proj``); returns
    (output, weights)."""

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim {embed_dim} must be divisible by num_heads {num_heads}")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        self.add_zero_attn = add_zero_attn
        kw = {"device": device, "dtype": dtype}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Param(empty(3 * embed_dim, embed_dim, **kw))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Param(empty(embed_dim, embed_dim, **kw))
            self.k_proj_weight = Param(empty(embed_dim, self.kdim, **kw))
            self.v_proj_weight = Param(empty(embed_dim, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Param(zeros(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self.bias_k: Param | None = None
        self.bias_v: Param | None = None
        if add_bias_kv:
            self.bias_k = Param(empty(1, 1, embed_dim, **kw))
            self.bias_v = Param(empty(1, 1, embed_dim, **kw))
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)
        for w in (self.in_proj_weight, self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
            if w is not None:
                init.xavier_uniform_(w)
        if bias:
            init.zeros_(self.out_proj.bias)  # type: ignore[arg-type]

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        _check_masks(self, query, key, attn_mask, key_padding_mask, ("attn_mask", "key_padding_mask"))
        batched = query.ndim == 3
        if batched and self.batch_first:  # (self-attention stays recognisable: query is key is value)
            same_k, same_v = key is query, value is key
            query = query.transpose(0, 1)
            key = query if same_k else key.transpose(0, 1)
            value = key if same_v else value.transpose(0, 1)
        if query.shape[-1] != self.embed_dim:
            raise ValueError(f"MultiheadAttention: expected embed_dim {self.embed_dim}, got query {tuple(query.shape)}")
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias, self.training,
            key_padding_mask, need_weights, attn_mask, not self._qkv_same_embed_dim, self.q_proj_weight,
            self.k_proj_weight, self.v_proj_weight, average_attn_weights=average_attn_weights, is_causal=is_causal,
        )  # fmt: skip
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}"


class _Block(Module):
    """What encoder and decoder layers share: attention with dropout, and the feed-forward part."""

    linear1: Linear
    linear2: Linear
    dropout: Dropout
    activation: Any

    @staticmethod
    def _attend(attn: Module, q: Tensor, kv: Tensor, mask: Any, kpm: Any, causal: bool,
                names: tuple[str, str]) -> Tensor:  # fmt: skip
        _check_masks(attn, q, kv, mask, kpm, names)
        return attn(q, kv, kv, key_padding_mask=kpm, attn_mask=mask, need_weights=False, is_causal=causal)[0]  # type: ignore[no-any-return]

    @staticmethod
    def _residual(x: Tensor, z: Tensor, drop: Module) -> Tensor:
        return residual(x, z, drop)

    def _build(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float, activation: Any, eps: float,
               batch_first: bool, norm_first: bool, bias: bool, kw: dict[str, Any], cross: bool) -> None:  # fmt: skip
        """Create the sub-modules in PyTorch's order; ``cross`` adds the decoder's attention over memory."""
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first=batch_first, **kw)
        if cross:
            self.multihead_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias, **kw)
        self.norm_first = norm_first
        n = 3 if cross else 2
        for i in range(1, n + 1):
            setattr(self, f"norm{i}", LayerNorm(d_model, eps, bias=bias, **kw))
        for i in range(1, n + 1):
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = get_activation(activation) if isinstance(activation, str) else activation

    def _feed_forward(self, x: Tensor) -> Tensor:
        """``linear2(dropout(activation(linear1(x))))``; ReLU and dropout as one node keeping a bool mask."""
        h = self.linear1(x)
        act, drop = self.activation, self.dropout
        if (act is F.relu or _plain(act, ReLU)) and _plain(drop, Dropout):
            a = relu_dropout(h, drop.p, drop.training)
            if a is not None:
                return self.linear2(a)  # type: ignore[no-any-return]
        return self.linear2(drop(act(h)))  # type: ignore[no-any-return]


def residual(x: Tensor, z: Tensor, drop: Module) -> Tensor:
    """``x + drop(z)``: one node keeping only the dropout's bool mask (none of ``x`` or ``z``) when ``drop`` is a
    plain ``Dropout``."""
    if _plain(drop, Dropout):
        y = dropout_add(x, z, drop.p, drop.training)  # type: ignore[arg-type]
        if y is not None:
            return y
    return x + drop(z)  # type: ignore[no-any-return]


def _plain(m: Any, cls: type[Module]) -> bool:
    """``m`` is exactly a ``cls`` module without hooks (a fused path may stand in for its forward)."""
    return type(m) is cls and not (m._pre_hooks or m._fwd_hooks or m._bwd_hooks or GLOBAL_PRE or GLOBAL_FWD)


class TransformerEncoderLayer(_Block):
    """Self-attention + feed-forward block (post-norm by default, ``norm_first`` for pre-norm)."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Any = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self._build(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first,
                    bias, {"device": device, "dtype": dtype}, cross=False)  # fmt: skip

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        def sa(x: Tensor) -> Tensor:
            return self._attend(self.self_attn, x, x, src_mask, src_key_padding_mask, is_causal,
                                ("src_mask", "src_key_padding_mask"))  # fmt: skip

        x, res = src, self._residual
        if self.norm_first:
            x = res(x, sa(self.norm1(x)), self.dropout1)
            return res(x, self._feed_forward(self.norm2(x)), self.dropout2)
        x = self.norm1(res(x, sa(x), self.dropout1))
        return self.norm2(res(x, self._feed_forward(x), self.dropout2))  # type: ignore[no-any-return]


class TransformerDecoderLayer(_Block):
    """Self-attention, cross-attention over ``memory``, and feed-forward."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Any = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self._build(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first,
                    bias, {"device": device, "dtype": dtype}, cross=True)  # fmt: skip

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        def sa(x: Tensor) -> Tensor:
            return self._attend(self.self_attn, x, x, tgt_mask, tgt_key_padding_mask, tgt_is_causal,
                                ("tgt_mask", "tgt_key_padding_mask"))  # fmt: skip

        def mha(x: Tensor) -> Tensor:
            return self._attend(self.multihead_attn, x, memory, memory_mask, memory_key_padding_mask,
                                memory_is_causal, ("memory_mask", "memory_key_padding_mask"))  # fmt: skip

        x, res = tgt, self._residual
        if self.norm_first:
            x = res(x, sa(self.norm1(x)), self.dropout1)
            x = res(x, mha(self.norm2(x)), self.dropout2)
            return res(x, self._feed_forward(self.norm3(x)), self.dropout3)
        x = self.norm1(res(x, sa(x), self.dropout1))
        x = self.norm2(res(x, mha(x), self.dropout2))
        return self.norm3(res(x, self._feed_forward(x), self.dropout3))  # type: ignore[no-any-return]


def _get_clones(module: Module, n: int) -> ModuleList:
    """``n`` independent deep copies of ``module`` (same initial weights, as in PyTorch)."""
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _check_stack(kind: str, layer: Any, num_layers: Any) -> None:
    if not isinstance(layer, Module):
        raise TypeError(f"{kind}: expected a layer Module to stack, got {type(layer).__name__}")
    if not isinstance(num_layers, int) or num_layers < 1:
        raise ValueError(f"{kind}: num_layers must be a positive integer, got {num_layers!r}")


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of ``encoder_layer``, then the optional ``norm``.

    With ``enable_nested_tensor`` (PyTorch's default), in inference with a ``src_key_padding_mask`` the output at
    padded positions is 0 before ``norm``, as PyTorch's nested-tensor path gives (``_encoder_padding.py``).
    """

    def __init__(
        self,
        encoder_layer: Module,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        _check_stack("TransformerEncoder", encoder_layer, num_layers)
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check
        self.use_nested_tensor = enable_nested_tensor and nested_ok(encoder_layer)

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        padded = padded_positions(self, src, mask, src_key_padding_mask)
        if padded is not None:
            out = out.masked_fill(padded.unsqueeze(-1), 0.0)
        return self.norm(out) if self.norm is not None else out


class TransformerDecoder(Module):
    """A stack of ``num_layers`` copies of ``decoder_layer``, then the optional ``norm``."""

    def __init__(self, decoder_layer: Module, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        _check_stack("TransformerDecoder", decoder_layer, num_layers)
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)  # fmt: skip
        return self.norm(out) if self.norm is not None else out


class Transformer(Module):
    """The encoder-decoder transformer of "Attention Is All You Need", with PyTorch's signature and state_dict keys
    (``encoder.layers.0.self_attn.in_proj_weight``, ``encoder.norm.weight``, ``decoder.layers.0...``)."""

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Any = F.relu,
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            enc = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                          batch_first, norm_first, bias, **kw)  # fmt: skip
            self.encoder = TransformerEncoder(
                enc, num_encoder_layers, LayerNorm(d_model, layer_norm_eps, bias=bias, **kw)
            )
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            dec = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                          batch_first, norm_first, bias, **kw)  # fmt: skip
            self.decoder = TransformerDecoder(
                dec, num_decoder_layers, LayerNorm(d_model, layer_norm_eps, bias=bias, **kw)
            )
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and (tgt.ndim != 3 or src.shape[batch_dim] != tgt.shape[batch_dim]):
            raise ShapeError(f"Transformer: the batch number of src {tuple(src.shape)} and tgt {tuple(tgt.shape)} "
                             f"must be equal (batch_first={self.batch_first})")  # fmt: skip
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(f"Transformer: the feature number of src {tuple(src.shape)} and tgt {tuple(tgt.shape)} "
                             f"must be equal to d_model={self.d_model}")  # fmt: skip
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,  # type: ignore[no-any-return]
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)  # fmt: skip

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
        """A float (sz, sz) mask: 0 on and below the diagonal, -inf above (position i sees positions <= i)."""
        return triu(full((sz, sz), -math.inf, dtype=dtype, device=device), 1)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, nhead={self.nhead}, batch_first={self.batch_first}"


MultiheadAttentionConfig = config_for(MultiheadAttention)
TransformerEncoderLayerConfig = config_for(TransformerEncoderLayer)
TransformerDecoderLayerConfig = config_for(TransformerDecoderLayer)
__all__ += ["MultiheadAttentionConfig", "TransformerDecoderLayerConfig", "TransformerEncoderLayerConfig"]
