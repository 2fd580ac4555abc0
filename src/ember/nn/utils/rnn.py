"""Variable-length sequences for the recurrent layers (PyTorch's ``torch.nn.utils.rnn``): padding, and the packed
form ``PackedSequence`` that ``RNN``/``LSTM``/``GRU`` accept.

A packed sequence holds the steps of a batch of sequences time-major, longest sequence first: step ``t`` of the
``batch_sizes[t]`` sequences still running, one after another, in ``data``. ``sorted_indices[i]`` is the original
batch position of the ``i``-th longest sequence (None when the batch came sorted). Every function here is made of
differentiable Ember operations: gradients flow from the packed data back to the padded input and on.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..._creation import tensor
from ..._errors import ShapeError
from ..._tensor import Tensor
from ...ops import cat, stack
from ..functional import pad

__all__ = [
    "PackedSequence",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


class PackedSequence(NamedTuple):
    """``data`` (the running sequences' steps, time-major), ``batch_sizes`` (how many run at each step, int64 on
    the CPU), ``sorted_indices`` and ``unsorted_indices`` (None when the batch came sorted by length)."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The same sequences with ``data`` converted (``batch_sizes`` stays on the CPU, as in PyTorch)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        idx = [None if t is None else t.to(device=data.device) for t in (self.sorted_indices, self.unsorted_indices)]
        return PackedSequence(data, self.batch_sizes, *idx)

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def double(self) -> PackedSequence:
        return self.to("float64")

    def float(self) -> PackedSequence:
        return self.to("float32")

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


def _lengths(lengths: Any) -> list[int]:
    return [int(n) for n in (lengths.tolist() if isinstance(lengths, Tensor) else lengths)]


def _index(values: list[int], like: Tensor) -> Tensor:
    return tensor(values, dtype="int64", device=like.device)


def pack_padded_sequence(
    input: Tensor, lengths: Any, batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) whose sequences have ``lengths``."""
    n = _lengths(lengths)
    x = input.transpose(0, 1) if batch_first else input
    if x.ndim < 2 or len(n) != x.shape[1]:
        raise ShapeError(f"pack_padded_sequence: {len(n)} lengths for a batch of shape {tuple(input.shape)}")
    if any(k <= 0 or k > x.shape[0] for k in n):
        raise ValueError(f"pack_padded_sequence: lengths must be in [1, {x.shape[0]}] (the padded length), got {n}")
    if enforce_sorted:
        if any(a < b for a, b in itertools.pairwise(n)):
            raise RuntimeError(
                "pack_padded_sequence: `lengths` must be sorted in decreasing order when `enforce_sorted` is True; "
                "pass enforce_sorted=False to pack an unsorted batch"
            )
        order, sorted_idx, unsorted_idx = list(range(len(n))), None, None
    else:
        order = sorted(range(len(n)), key=lambda i: -n[i])  # stable: equal lengths keep their order
        inverse = [0] * len(order)
        for pos, i in enumerate(order):
            inverse[i] = pos
        sorted_idx, unsorted_idx = _index(order, x), _index(inverse, x)
    sizes = [sum(1 for i in order if n[i] > t) for t in range(n[order[0]])]
    if sorted_idx is not None:
        x = x.index_select(1, sorted_idx)
    data = cat([x[t, :b] for t, b in enumerate(sizes)], 0)
    return PackedSequence(data, tensor(sizes, dtype="int64"), sorted_idx, unsorted_idx)


def pad_packed_sequence(
    sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0, total_length: int | None = None
) -> tuple[Tensor, Tensor]:
    """The padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of a packed one, in the original batch
    order, and the lengths (int64)."""
    data, sizes = sequence.data, _lengths(sequence.batch_sizes)
    steps = len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                f"pad_packed_sequence: total_length {total_length} is below the longest sequence's length {steps}"
            )
        steps = total_length
    batch = sizes[0]
    rows, start = [], 0
    for b in sizes:
        step = data[start : start + b]
        if b < batch:  # the finished sequences' places hold padding_value
            step = pad(step, (0, 0) * (data.ndim - 1) + (0, batch - b), value=padding_value)
        rows.append(step)
        start += b
    out = stack(rows, 0)
    if steps > len(sizes):
        out = pad(out, (0, 0) * (data.ndim - 1) + (0, 0, 0, steps - len(sizes)), value=padding_value)
    lengths = [sum(1 for b in sizes if b > i) for i in range(batch)]
    if sequence.unsorted_indices is not None:
        out = out.index_select(1, sequence.unsorted_indices)
        lengths = [lengths[i] for i in _lengths(sequence.unsorted_indices)]
    return (out.transpose(0, 1) if batch_first else out), tensor(lengths, dtype="int64")


def pad_sequence(
    sequences: Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"
) -> Tensor:
    """Stack sequences of shapes ``(L_i, *)`` into ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``), padding
    each to the longest on ``padding_side`` ("right" or "left") with ``padding_value``."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'right' or 'left', got {padding_side!r}")
    seqs = list(sequences)
    if not seqs:
        raise ValueError("pad_sequence: received an empty list of sequences")
    longest = max(s.shape[0] for s in seqs)
    padded = []
    for s in seqs:
        extra = longest - s.shape[0]
        widths = (0, extra) if padding_side == "right" else (extra, 0)
        padded.append(pad(s, (0, 0) * (s.ndim - 1) + widths, value=padding_value) if extra else s)
    return stack(padded, 0 if batch_first else 1)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences ``(L_i, *)`` (longest first when ``enforce_sorted``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """The sequences of a padded batch, each cut to its length."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, :n] for i, n in enumerate(_lengths(lengths))]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The sequences of a packed batch, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
