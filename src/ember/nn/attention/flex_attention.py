"""``ember.nn.attention.flex_attention`` (PyTorch's ``torch.nn.attention.flex_attention``): attention whose scores a
Python function edits (``score_mod``) and whose mask a Python function gives (``mask_mod``), computed densely.

``create_block_mask`` evaluates ``mask_mod(b, h, q_idx, kv_idx)`` on broadcast index tensors (the same values
PyTorch's ``vmap`` feeds it), pads the sequence to whole blocks with False and keeps PyTorch's block summary:
per query block the kv blocks that are partly allowed (``kv_num_blocks``/``kv_indices``) and wholly allowed
(``full_kv_*``), and the transposed ``q_*`` tables. ``flex_attention`` computes ``softmax(score_mod(q·kᵀ·scale))·v``
in float32 (float64 for float64 inputs) where the block mask allows: a full block is allowed whole, a partial block
where ``mask_mod`` is True, a missing block nowhere; a query row with nothing allowed gives zeros (and a
log-sum-exp of -inf), as PyTorch. It is built of Ember operators, so it is differentiable.
"""

# ruff: noqa: N803 - PyTorch's argument names (B, H, Q_LEN, KV_LEN, BLOCK_SIZE)
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from ... import ops
from ..._creation import arange, full, zeros
from ..._dtype import bool_, float32, float64, int32, int64
from ..._tensor import Tensor

__all__ = [
    "AuxOutput",
    "AuxRequest",
    "BlockMask",
    "and_masks",
    "create_block_mask",
    "create_mask",
    "flex_attention",
    "noop_mask",
    "or_masks",
]

_DEFAULT_SPARSE_BLOCK_SIZE = 128
_LARGE_SPARSE_BLOCK_SIZE = 1 << 30


class AuxRequest(NamedTuple):
    """Which extra outputs ``flex_attention(..., return_aux=)`` returns."""

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The extra outputs asked for by an ``AuxRequest`` (None where not asked)."""

    lse: Tensor | None = None
    max_scores: Tensor | None = None


def noop_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
    """The mask that allows every position."""
    return q_idx.new_ones((), dtype=bool_)


def and_masks(*mask_mods: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The mask allowing a position where every one of ``mask_mods`` does."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def both(b: Tensor, h: Tensor, q: Tensor, kv: Tensor) -> Tensor:
        out = q.new_ones((), dtype=bool_)
        for m in mask_mods:
            out = out & m(b, h, q, kv)
        return out

    return both


def or_masks(*mask_mods: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The mask allowing a position where any one of ``mask_mods`` does."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def either(b: Tensor, h: Tensor, q: Tensor, kv: Tensor) -> Tensor:
        out = q.new_zeros((), dtype=bool_)
        for m in mask_mods:
            out = out | m(b, h, q, kv)
        return out

    return either


def _indices(B: int, H: int, Q: int, KV: int, device: Any) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Index tensors broadcasting to (B, H, Q, KV)."""
    return (
        arange(B, device=device).reshape(B, 1, 1, 1),
        arange(H, device=device).reshape(1, H, 1, 1),
        arange(Q, device=device).reshape(1, 1, Q, 1),
        arange(KV, device=device).reshape(1, 1, 1, KV),
    )


def create_mask(
    mod_fn: Callable[..., Tensor], B: int | None, H: int | None, Q_LEN: int, KV_LEN: int, device: Any = "cpu"
) -> Tensor:
    """The dense (B, H, Q_LEN, KV_LEN) boolean mask of a ``mask_mod`` (None for B or H: 1)."""
    B, H = B or 1, H or 1
    m = mod_fn(*_indices(B, H, Q_LEN, KV_LEN, device))
    return ops.broadcast_to(m, (B, H, Q_LEN, KV_LEN)).to(bool_).contiguous()


def _ordered(dense: Tensor) -> tuple[Tensor, Tensor]:
    """(count, indices) of the nonzero blocks per row, indices first the nonzero ones in order (int32)."""
    num = dense.sum(-1).to(int32)
    idx = ops.argsort(dense.to(int32), dim=-1, descending=True, stable=True).to(int32)
    return num, idx


class BlockMask:
    """Which (query block, kv block) pairs attention visits, and the ``mask_mod`` inside partial blocks."""

    def __init__(
        self,
        seq_lengths: tuple[int, int],
        kv_num_blocks: Tensor,
        kv_indices: Tensor,
        full_kv_num_blocks: Tensor | None,
        full_kv_indices: Tensor | None,
        q_num_blocks: Tensor | None,
        q_indices: Tensor | None,
        full_q_num_blocks: Tensor | None,
        full_q_indices: Tensor | None,
        BLOCK_SIZE: tuple[int, int],
        mask_mod: Callable[..., Tensor],
    ) -> None:
        self.seq_lengths: tuple[int, int] = (int(seq_lengths[0]), int(seq_lengths[1]))
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.q_num_blocks, self.q_indices = q_num_blocks, q_indices
        self.full_q_num_blocks, self.full_q_indices = full_q_num_blocks, full_q_indices
        self.BLOCK_SIZE: tuple[int, int] = (int(BLOCK_SIZE[0]), int(BLOCK_SIZE[1]))
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(
        cls,
        kv_num_blocks: Tensor,
        kv_indices: Tensor,
        full_kv_num_blocks: Tensor | None = None,
        full_kv_indices: Tensor | None = None,
        BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE,
        mask_mod: Callable[..., Tensor] | None = None,
        seq_lengths: tuple[int, int] | None = None,
        compute_q_blocks: bool = True,
    ) -> BlockMask:
        """A block mask from its kv tables (the q tables are derived, as PyTorch's)."""
        bs = BLOCK_SIZE if isinstance(BLOCK_SIZE, tuple) else (BLOCK_SIZE, BLOCK_SIZE)
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * bs[0], kv_indices.shape[-1] * bs[1])
        partial = _to_dense(kv_num_blocks, kv_indices)
        q = _ordered(partial.transpose(-2, -1)) if compute_q_blocks else (None, None)
        fq: tuple[Any, Any] = (None, None)
        if full_kv_num_blocks is not None and full_kv_indices is not None and compute_q_blocks:
            fq = _ordered(_to_dense(full_kv_num_blocks, full_kv_indices).transpose(-2, -1))
        return cls(seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, q[0], q[1],
                   fq[0], fq[1], bs, mask_mod or noop_mask)  # fmt: skip

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(B, H, Q_LEN, KV_LEN)."""
        b, h = self.kv_num_blocks.shape[:2]
        return (b, h, *self.seq_lengths)  # type: ignore[return-value]

    def as_tuple(self, flatten: bool = True) -> tuple[Any, ...]:
        """The fields in PyTorch's order (the block sizes flattened unless ``flatten=False``)."""
        bs: tuple[Any, ...] = self.BLOCK_SIZE if flatten else (self.BLOCK_SIZE,)
        return (*self.seq_lengths, self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks,
                self.full_kv_indices, self.q_num_blocks, self.q_indices, self.full_q_num_blocks,
                self.full_q_indices, *bs, self.mask_mod)  # fmt: skip

    def to_dense(self) -> Tensor:
        """The (B, H, q blocks, kv blocks) int32 table of visited blocks (partial or full)."""
        dense = _to_dense(self.kv_num_blocks, self.kv_indices)
        if self.full_kv_num_blocks is not None and self.full_kv_indices is not None:
            dense = dense | _to_dense(self.full_kv_num_blocks, self.full_kv_indices)
        return dense.to(int32)

    def sparsity(self) -> float:
        """The percentage of blocks not visited (of those the sequence lengths cover)."""
        q, kv = (math.ceil(n / b) for n, b in zip(self.seq_lengths, self.BLOCK_SIZE, strict=True))
        dense = self.to_dense()[..., :q, :kv]
        return 100.0 * (1.0 - float(dense.sum()) / max(dense.numel(), 1))

    def to(self, device: Any) -> BlockMask:
        """A copy with its tables on ``device``."""
        f: list[Any] = [None if t is None else t.to(device) for t in self.as_tuple()[2:10]]
        return BlockMask(self.seq_lengths, *f, BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=self.mask_mod)  # type: ignore[arg-type,misc]

    def __repr__(self) -> str:
        return f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, BLOCK_SIZE={self.BLOCK_SIZE})"


def _to_dense(num: Tensor, indices: Tensor) -> Tensor:
    """The boolean (..., rows, blocks) table that ``num``/``indices`` list (the first ``num`` indices per row)."""
    n = indices.shape[-1]
    keep = arange(n, device=indices.device) < num.unsqueeze(-1).to(int64)
    dense = zeros(tuple(indices.shape[:-1]) + (n,), dtype=bool_, device=indices.device)
    return dense.scatter(-1, indices.to(int64), keep) if n else dense


def create_block_mask(
    mask_mod: Callable[..., Tensor],
    B: int | None,
    H: int | None,
    Q_LEN: int,
    KV_LEN: int,
    device: Any = "cuda",
    BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE,
    _compile: bool = False,
) -> BlockMask:
    """The block mask of ``mask_mod`` over (B, H, Q_LEN, KV_LEN) (None for B or H: one, broadcast)."""
    bq, bk = BLOCK_SIZE if isinstance(BLOCK_SIZE, tuple) else (BLOCK_SIZE, BLOCK_SIZE)
    mask = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device)
    nq, nk = math.ceil(Q_LEN / bq), math.ceil(KV_LEN / bk)
    padded = zeros((mask.shape[0], mask.shape[1], nq * bq, nk * bk), dtype=bool_, device=mask.device)
    padded[:, :, :Q_LEN, :KV_LEN] = mask
    blocks = padded.reshape(mask.shape[0], mask.shape[1], nq, bq, nk, bk)
    full = blocks.all(dim=5).all(dim=3)
    partial = blocks.any(dim=5).any(dim=3) & ~full
    kv = _ordered(partial)
    fkv = _ordered(full)
    q = _ordered(partial.transpose(-2, -1))
    fq = _ordered(full.transpose(-2, -1))
    return BlockMask((Q_LEN, KV_LEN), kv[0], kv[1], fkv[0], fkv[1], q[0], q[1], fq[0], fq[1], (bq, bk), mask_mod)


def _allowed(block_mask: BlockMask, B: int, H: int, L: int, S: int, device: Any) -> Tensor:
    """The element-level (B or 1, H or 1, L, S) boolean mask a block mask gives."""
    bq, bk = block_mask.BLOCK_SIZE
    partial = _to_dense(block_mask.kv_num_blocks, block_mask.kv_indices)
    full = None
    if block_mask.full_kv_num_blocks is not None and block_mask.full_kv_indices is not None:
        full = _to_dense(block_mask.full_kv_num_blocks, block_mask.full_kv_indices)

    def expand(t: Tensor) -> Tensor:
        e = t.repeat_interleave(bq, dim=-2).repeat_interleave(bk, dim=-1)
        return e[..., :L, :S]

    bb, hh = partial.shape[0], partial.shape[1]
    inner = create_mask(block_mask.mask_mod, bb if bb > 1 else B, hh if hh > 1 else H, L, S, device)
    allowed = expand(partial) & inner
    return allowed | expand(full) if full is not None else allowed


def flex_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    score_mod: Callable[..., Tensor] | None = None,
    block_mask: BlockMask | None = None,
    scale: float | None = None,
    enable_gqa: bool = False,
    return_lse: bool = False,
    kernel_options: Any = None,
    *,
    return_aux: AuxRequest | None = None,
) -> Any:
    """Attention of (B, Hq, L, E) queries over (B, Hkv, S, E) keys and (B, Hkv, S, Ev) values (see the module doc)."""
    if query.ndim != 4 or key.ndim != 4 or value.ndim != 4:
        raise ValueError(
            f"flex_attention: query, key and value must be 4-d (B, H, L, E), got {query.ndim}, {key.ndim}, {value.ndim}"
        )
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"flex_attention: query and key embedding dims differ ({query.shape[-1]} vs {key.shape[-1]})")
    B, Hq, L, E = query.shape
    Hkv, S = key.shape[1], key.shape[2]
    if Hq != Hkv:
        if not enable_gqa:
            raise ValueError(f"flex_attention: {Hq} query heads and {Hkv} kv heads need enable_gqa=True")
        if Hq % Hkv:
            raise ValueError(f"flex_attention: {Hq} query heads must be a multiple of the {Hkv} kv heads")
        key = key.repeat_interleave(Hq // Hkv, dim=1)
        value = value.repeat_interleave(Hq // Hkv, dim=1)
    work = float64 if query.dtype is float64 else float32
    s = 1.0 / math.sqrt(E) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)).to(work) * s
    if score_mod is not None:
        scores = score_mod(scores, *_indices(B, Hq, L, S, query.device))
    if block_mask is not None:
        allowed = _allowed(block_mask, B, Hq, L, S, query.device)
        scores = ops.where(allowed, scores, full((), -math.inf, dtype=work, device=query.device))
    lse = ops.logsumexp(scores, dim=-1)
    any_allowed = (lse > -math.inf).unsqueeze(-1)
    weights = ops.where(any_allowed, ops.exp(scores - ops.where(any_allowed, lse.unsqueeze(-1), 0.0)), 0.0)
    out = (weights @ value.to(work)).to(query.dtype)
    if return_aux is not None:
        mx = scores.amax(dim=-1) if return_aux.max_scores else None
        return out, AuxOutput(lse=lse if return_aux.lse else None, max_scores=mx)
    return (out, lse) if return_lse else out
