"""Text for language models: a ``Vocab`` (token <-> index) and a ``TextCorpus`` of character or word tokens."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .dataset import Dataset

__all__ = ["TextCorpus", "Vocab"]


class Vocab:
    """Tokens and their indices: ``vocab["the"]``, ``vocab.lookup_token(3)``, ``len(vocab)``.

    ``build`` counts tokens and keeps those seen at least ``min_freq`` times (the most frequent first, ties in
    order of first appearance), after the ``specials``; with ``unk`` set, unknown tokens map to it, otherwise
    they raise a ``KeyError`` naming the token.
    """

    def __init__(self, tokens: Sequence[str], unk: str | None = None) -> None:
        self.itos = list(tokens)
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            dup = next(t for t in self.itos if self.itos.count(t) > 1)
            raise ValueError(f"Vocab: the token {dup!r} appears more than once")
        if unk is not None and unk not in self.stoi:
            raise ValueError(f"Vocab: the unknown token {unk!r} is not in the vocabulary (add it to specials)")
        self.unk = unk

    @classmethod
    def build(cls, tokens: Iterable[str], min_freq: int = 1, specials: Sequence[str] = (), unk: str | None = None,
              max_size: int | None = None) -> Vocab:  # fmt: skip
        counts = Counter(tokens)
        order = {t: i for i, t in enumerate(counts)}
        kept = sorted((t for t, c in counts.items() if c >= min_freq and t not in specials),
                      key=lambda t: (-counts[t], order[t]))  # fmt: skip
        if max_size is not None:
            kept = kept[: max(0, max_size - len(specials))]
        return cls([*specials, *kept], unk=unk)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: object) -> bool:
        return token in self.stoi

    def __getitem__(self, token: str) -> int:
        i = self.stoi.get(token)
        if i is not None:
            return i
        if self.unk is not None:
            return self.stoi[self.unk]
        raise KeyError(f"Vocab: unknown token {token!r} (build the vocabulary with unk=... to map unknown tokens)")

    def lookup_indices(self, tokens: Iterable[str]) -> list[int]:
        return [self[t] for t in tokens]

    def lookup_token(self, index: int) -> str:
        if not 0 <= index < len(self.itos):
            raise IndexError(f"Vocab: index {index} out of range for {len(self.itos)} tokens")
        return self.itos[index]

    def lookup_tokens(self, indices: Iterable[int]) -> list[str]:
        return [self.lookup_token(int(i)) for i in indices]

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens, unk={self.unk!r})"


def _read_text(path: Path, encoding: str) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not valid {encoding} text at byte offset {e.start} ({e.reason}); "
                         f"pass the file's encoding=...") from None  # fmt: skip


class TextCorpus(Dataset):
    """A text as token indices, cut into ``(input, target)`` windows of ``seq_len`` tokens for language modelling.

    ``source`` is a file path (or a list of them, concatenated) or, with ``from_string=True``, the text itself.
    ``level="char"`` makes every character a token; ``level="word"`` splits on whitespace and appends ``eos``
    (default ``"<eos>"``) at each line end, as the classic word-level corpora do. Pass the training corpus's
    ``vocab`` to a validation corpus (its unknown words need ``unk``). ``ids`` holds all token indices (int64);
    sample ``i`` is ``ids[i*L : i*L+L]`` and the same shifted by one.
    """

    def __init__(self, source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], level: str = "char",
                 seq_len: int = 35, vocab: Vocab | None = None, lowercase: bool = False, eos: str | None = "<eos>",
                 unk: str | None = None, min_freq: int = 1, encoding: str = "utf-8",
                 from_string: bool = False) -> None:  # fmt: skip
        if level not in ("char", "word"):
            raise ValueError(f"TextCorpus: level must be 'char' or 'word', got {level!r}")
        if seq_len < 1:
            raise ValueError(f"TextCorpus: seq_len must be >= 1, got {seq_len}")
        if from_string:
            text = str(source)
        else:
            paths = [source] if isinstance(source, (str, os.PathLike)) else list(source)
            text = "".join(_read_text(Path(p), encoding) for p in paths)
        if lowercase:
            text = text.lower()
        tokens = self.tokenize(text, level, eos)
        if len(tokens) < 2:
            raise ValueError(f"TextCorpus: the text has {len(tokens)} token(s); a language model needs at least 2")
        specials = [s for s in (unk, eos if level == "word" else None) if s is not None]
        self.vocab = vocab if vocab is not None else Vocab.build(tokens, min_freq, specials, unk)
        self.ids = np.asarray(self.vocab.lookup_indices(tokens), dtype=np.int64)
        self.level, self.seq_len = level, seq_len

    @staticmethod
    def tokenize(text: str, level: str = "char", eos: str | None = "<eos>") -> list[str]:
        """Characters, or whitespace-separated words with ``eos`` after each non-empty line."""
        if level == "char":
            return list(text)
        out: list[str] = []
        for line in text.splitlines():
            words = line.split()
            if words:
                out += words
                if eos is not None:
                    out.append(eos)
        return out

    def __len__(self) -> int:
        return (len(self.ids) - 1) // self.seq_len

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from .._creation import from_numpy

        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"TextCorpus: index {index} out of range for {n} windows")
        start = (index % n) * self.seq_len
        window = self.ids[start : start + self.seq_len + 1]
        return from_numpy(window[:-1].copy()), from_numpy(window[1:].copy())

    def decode(self, indices: Iterable[int]) -> str:
        """Token indices back to text (characters joined, words joined by spaces)."""
        tokens = self.vocab.lookup_tokens(int(i) for i in indices)
        return ("" if self.level == "char" else " ").join(tokens)
