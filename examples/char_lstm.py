"""A character-level LSTM language model, in the style of PyTorch's word_language_model example.

    python examples/char_lstm.py                      # trains on the embedded text, then samples from it
    python examples/char_lstm.py --text book.txt --epochs 20 --hidden 256

The text is cut into ``--batch-size`` columns; training walks them in chunks of ``--bptt`` characters
(truncated backpropagation through time: the hidden state is carried over but detached), clips the
gradient norm and reports the validation perplexity each epoch. The best model is saved with
``ember.save`` and used to generate ``--generate`` characters.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.distributions import Categorical

TEXT = """\
It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of
foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light,
it was the season of Darkness, it was the spring of hope, it was the winter of despair, we had
everything before us, we had nothing before us, we were all going direct to Heaven, we were all going
direct the other way - in short, the period was so far like the present period, that some of its
noisiest authorities insisted on its being received, for good or for evil, in the superlative degree
of comparison only.
"""


class Corpus:
    """Characters <-> ids, and the text split 90/10 into train and validation id tensors."""

    def __init__(self, text: str) -> None:
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}
        ids = ember.tensor([self.index[c] for c in text], dtype=ember.int64)
        n = int(len(ids) * 0.9)
        self.train, self.valid = ids[:n], ids[n:]


def batchify(data: ember.Tensor, bsz: int) -> ember.Tensor:
    """(len,) ids -> (len // bsz, bsz): each column a contiguous stretch of the text."""
    nbatch = data.size(0) // bsz
    return data[: nbatch * bsz].view(bsz, -1).t().contiguous()


def get_batch(source: ember.Tensor, i: int, bptt: int) -> tuple[ember.Tensor, ember.Tensor]:
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)


class CharLSTM(nn.Module):
    def __init__(self, ntoken: int, ninp: int, nhid: int, nlayers: int, dropout: float = 0.2) -> None:
        super().__init__()
        self.ntoken, self.nhid, self.nlayers = ntoken, nhid, nlayers
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout if nlayers > 1 else 0.0)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, input: ember.Tensor, hidden: tuple[ember.Tensor, ember.Tensor]) -> tuple[ember.Tensor, ...]:
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz: int) -> tuple[ember.Tensor, ember.Tensor]:
        weight = next(self.parameters())
        return weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid)


def repackage_hidden(h: tuple[ember.Tensor, ...]) -> tuple[ember.Tensor, ...]:
    """Cut the graph at the chunk boundary: the state is kept, its history is not."""
    return tuple(v.detach() for v in h)


def evaluate(model: CharLSTM, data: ember.Tensor, bptt: int, bsz: int) -> float:
    model.eval()
    total, hidden = 0.0, model.init_hidden(bsz)
    with ember.no_grad():
        for i in range(0, data.size(0) - 1, bptt):
            x, y = get_batch(data, i, bptt)
            output, hidden = model(x, hidden)
            total += len(x) * F.nll_loss(output, y).item()
    return total / (len(data) - 1)


def generate(model: CharLSTM, corpus: Corpus, n: int, temperature: float, prompt: str = "It") -> str:
    model.eval()
    hidden = model.init_hidden(1)
    out = list(prompt)
    x = ember.tensor([[corpus.index[c]] for c in prompt], dtype=ember.int64)
    with ember.no_grad():
        for _ in range(n):
            logp, hidden = model(x, hidden)
            idx = int(Categorical(logits=logp[-1] / temperature).sample().item())
            out.append(corpus.chars[idx])
            x = ember.tensor([[idx]], dtype=ember.int64)
    return "".join(out)


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--text", default=None, help="a UTF-8 text file (default: the embedded paragraph)")
    p.add_argument("--epochs", type=int, default=int(os.environ.get("EPOCHS", 30)))
    p.add_argument("--emsize", type=int, default=32)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--clip", type=float, default=0.25)
    p.add_argument("--bptt", type=int, default=25)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--generate", type=int, default=200, help="characters to sample at the end")
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--save", default="runs/char-lstm/model.pt")
    p.add_argument("--seed", type=int, default=1111)
    args = p.parse_args(argv)

    ember.manual_seed(args.seed)
    text = Path(args.text).read_text(encoding="utf-8") if args.text else TEXT
    corpus = Corpus(text)
    train_data, val_data = batchify(corpus.train, args.batch_size), batchify(corpus.valid, 1)
    model = CharLSTM(len(corpus.chars), args.emsize, args.hidden, args.layers, args.dropout)
    optimizer = ember.optim.Adam(model.parameters(), lr=args.lr)
    best_val = math.inf
    for epoch in range(1, args.epochs + 1):
        model.train()
        hidden = model.init_hidden(args.batch_size)
        total, chunks = 0.0, 0
        for i in range(0, train_data.size(0) - 1, args.bptt):
            x, y = get_batch(train_data, i, args.bptt)
            hidden = repackage_hidden(hidden)
            optimizer.zero_grad()
            output, hidden = model(x, hidden)
            loss = F.nll_loss(output, y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            total, chunks = total + loss.item(), chunks + 1
        val_loss = evaluate(model, val_data, args.bptt, 1)
        train_loss = total / max(chunks, 1)
        print(f"| epoch {epoch:3d} | train loss {train_loss:5.2f} | valid loss {val_loss:5.2f} "
              f"| valid ppl {math.exp(val_loss):8.2f}")  # fmt: skip
        if val_loss < best_val:
            best_val = val_loss
            ember.save(model.state_dict(), args.save)
    model.load_state_dict(ember.load(args.save))
    sample = generate(model, corpus, args.generate, args.temperature)
    print(sample)
    return {"valid_loss": best_val, "train_loss": train_loss, "vocab": len(corpus.chars), "sample": sample}


if __name__ == "__main__":
    main()
