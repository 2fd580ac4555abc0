"""Hugging Face BERT with its module names and state-dict keys (``bert.encoder.layer.0.attention.self.query.weight``,
``cls.predictions.transform.dense.bias``): ``ember.models.bert.from_pretrained(dir)`` reads a folder saved by
``transformers`` (``config.json`` + ``model.safetensors``) without transformers or torch.

>>> model = ember.models.bert.from_pretrained("bert-base-uncased")   # a local folder: BertForMaskedLM
>>> logits = model(ember.tensor([[101, 7592, 102]]))                 # (1, 3, vocab_size)
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

from .._creation import arange, zeros, zeros_like
from .._tensor import Tensor
from ..nn import Dropout, Embedding, LayerNorm, Linear, Module, ModuleList, Param
from ..nn import functional as F
from ._hf import activation, read_config, read_weights, reject
from ._weights import load_checked

__all__ = ["BertConfig", "BertForMaskedLM", "BertModel", "from_pretrained"]

_MIN = -3.4028234663852886e38  # float32's lowest value: masked scores stay finite, as in transformers


@dataclasses.dataclass
class BertConfig:
    """The fields of a transformers ``BertConfig`` that shape the network."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    pad_token_id: int | None = 0

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BertConfig:
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})


class BertEmbeddings(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.word_embeddings = Embedding(c.vocab_size, c.hidden_size)
        self.position_embeddings = Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = Dropout(c.hidden_dropout_prob)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor) -> Tensor:
        positions = arange(input_ids.shape[-1], device=input_ids.device)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(x + self.position_embeddings(positions)))  # type: ignore[no-any-return]


class BertSelfAttention(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.heads, self.size = c.num_attention_heads, c.hidden_size // c.num_attention_heads
        self.query, self.key, self.value = (Linear(c.hidden_size, c.hidden_size) for _ in range(3))
        self.dropout = Dropout(c.attention_probs_dropout_prob)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        b, t, e = x.shape
        q, k, v = (lin(x).reshape(b, t, self.heads, self.size).transpose(1, 2) for lin in (self.query, self.key,
                                                                                         self.value))  # fmt: skip
        p = self.dropout.p if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, scale=1.0 / math.sqrt(self.size))
        return y.transpose(1, 2).reshape(b, t, e)


class BertSelfOutput(Module):
    """``LayerNorm(dense(x) + residual)``; also BERT's feed-forward output (``BertOutput``)."""

    def __init__(self, cin: int, c: BertConfig) -> None:
        super().__init__()
        self.dense = Linear(cin, c.hidden_size)
        self.LayerNorm = LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = Dropout(c.hidden_dropout_prob)

    def forward(self, x: Tensor, residual: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)  # type: ignore[no-any-return]


class BertAttention(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        setattr(self, "self", BertSelfAttention(c))  # noqa: B010 - transformers' name, "attention.self.query"
        self.output = BertSelfOutput(c.hidden_size, c)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        attention: Any = self._modules["self"]
        return self.output(attention(x, mask), x)  # type: ignore[no-any-return]


class BertIntermediate(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.dense = Linear(c.hidden_size, c.intermediate_size)
        self.act = activation(c.hidden_act, "BertConfig", "ember.models.bert")

    def forward(self, x: Tensor) -> Tensor:
        return self.act(self.dense(x))


class BertLayer(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertSelfOutput(c.intermediate_size, c)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        x = self.attention(x, mask)
        return self.output(self.intermediate(x), x)  # type: ignore[no-any-return]


class BertEncoder(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.layer = ModuleList([BertLayer(c) for _ in range(c.num_hidden_layers)])

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        for layer in self.layer:
            x = layer(x, mask)
        return x


class BertPooler(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.dense = Linear(c.hidden_size, c.hidden_size)

    def forward(self, hidden: Tensor) -> Tensor:
        return self.dense(hidden[:, 0]).tanh()  # type: ignore[no-any-return]


class BertModel(Module):
    """Embeddings, encoder and (optionally) the pooler: ``(last_hidden_state, pooler_output or None)``."""

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        if add_pooling_layer:
            self.pooler = BertPooler(config)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, token_type_ids: Tensor | None = None
                ) -> tuple[Tensor, Tensor | None]:  # fmt: skip
        """``attention_mask`` (B, T): 1 for tokens, 0 for padding; ``token_type_ids`` (B, T): segment A/B."""
        if input_ids.shape[-1] > self.config.max_position_embeddings:
            raise ValueError(f"BertModel: sequence length {input_ids.shape[-1]} exceeds max_position_embeddings "
                             f"{self.config.max_position_embeddings}")  # fmt: skip
        types = token_type_ids if token_type_ids is not None else zeros_like(input_ids)
        mask = zeros(input_ids.shape[0], 1, 1, input_ids.shape[-1], device=input_ids.device)
        if attention_mask is not None:
            mask = mask + (1.0 - attention_mask.float()[:, None, None, :]) * _MIN
        hidden = self.encoder(self.embeddings(input_ids, types), mask)
        pooled = self.pooler(hidden) if "pooler" in self._modules else None
        return hidden, pooled


class BertPredictionHeadTransform(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.dense = Linear(c.hidden_size, c.hidden_size)
        self.transform_act_fn = activation(c.hidden_act, "BertConfig", "ember.models.bert")
        self.LayerNorm = LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, x: Tensor) -> Tensor:
        return self.LayerNorm(self.transform_act_fn(self.dense(x)))  # type: ignore[no-any-return]


class BertLMPredictionHead(Module):
    """The masked-LM head; its decoder is the word embedding matrix (tied), plus ``bias``."""

    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.transform = BertPredictionHeadTransform(c)
        self.bias = Param(zeros(c.vocab_size))


class BertOnlyMLMHead(Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.predictions = BertLMPredictionHead(c)


class BertForMaskedLM(Module):
    """BERT with its masked-language-model head: logits (B, T, vocab_size)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=False)
        self.cls = BertOnlyMLMHead(config)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, token_type_ids: Tensor | None = None
                ) -> Tensor:  # fmt: skip
        hidden, _ = self.bert(input_ids, attention_mask, token_type_ids)
        head = self.cls.predictions
        return F.linear(head.transform(hidden), self.bert.embeddings.word_embeddings.weight, head.bias)


def _unused(key: str) -> bool:
    """Keys some checkpoints carry that these modules do not use: a buffer, the pre-training head, tied copies."""
    return key.endswith(".position_ids") or key.startswith(("cls.seq_relationship.", "cls.predictions.decoder."))


def from_pretrained(directory: str | Path) -> BertForMaskedLM | BertModel:
    """A BERT saved by ``transformers`` (``save_pretrained``) in ``directory``, in eval mode: a ``BertForMaskedLM``
    for masked-LM (or pre-training) checkpoints, else a ``BertModel`` (with its pooler when the file has one)."""
    raw = read_config(directory, ("bert",), "ember.models.bert")
    reject(raw, str(directory), "ember.models.bert", position_embedding_type="absolute", is_decoder=False,
           add_cross_attention=False, tie_word_embeddings=True)  # fmt: skip
    config = BertConfig.from_dict(raw)
    state, source = read_weights(directory)
    state = {k: v for k, v in state.items() if not _unused(k)}
    model: Any
    if any(a in (raw.get("architectures") or []) for a in ("BertForMaskedLM", "BertForPreTraining")):
        model = BertForMaskedLM(config)
        state = {k: v for k, v in state.items() if not k.startswith("bert.pooler.")}
    else:
        model = BertModel(config, add_pooling_layer=any(f".{k}".find(".pooler.") >= 0 for k in state))
        state = {k.removeprefix("bert."): v for k, v in state.items() if not k.startswith("cls.")}
    load_checked(model, state, source)
    return model.eval()  # type: ignore[no-any-return]
