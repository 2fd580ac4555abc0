# The language-translation tutorial's Seq2SeqTransformer (nn.Transformer with masks, greedy decoding), SimCLR's
# NT-Xent loss, a CTC speech-style model, char-RNN generation with multinomial sampling, FGSM, and Hogwild!
# training with torch.multiprocessing.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.multiprocessing as mp
from torch.nn.utils.rnn import pad_sequence

torch.manual_seed(0)
PAD_IDX, BOS_IDX, EOS_IDX = 1, 2, 3
SRC_V, TGT_V, EMB = 20, 22, 32


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size, dropout, maxlen=100):
        super(PositionalEncoding, self).__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        pos_embedding = pos_embedding.unsqueeze(-2)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", pos_embedding)

    def forward(self, token_embedding):
        return self.dropout(token_embedding + self.pos_embedding[: token_embedding.size(0), :])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size, emb_size):
        super(TokenEmbedding, self).__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


class Seq2SeqTransformer(nn.Module):
    def __init__(self):
        super(Seq2SeqTransformer, self).__init__()
        self.transformer = nn.Transformer(
            d_model=EMB, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=64, dropout=0.1
        )
        self.generator = nn.Linear(EMB, TGT_V)
        self.src_tok_emb = TokenEmbedding(SRC_V, EMB)
        self.tgt_tok_emb = TokenEmbedding(TGT_V, EMB)
        self.positional_encoding = PositionalEncoding(EMB, dropout=0.1)

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
        src_emb = self.positional_encoding(self.src_tok_emb(src))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
        outs = self.transformer(
            src_emb, tgt_emb, src_mask, tgt_mask, None, src_padding_mask, tgt_padding_mask, memory_key_padding_mask
        )
        return self.generator(outs)

    def encode(self, src, src_mask):
        return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)), src_mask)

    def decode(self, tgt, memory, tgt_mask):
        return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)), memory, tgt_mask)


def generate_square_subsequent_mask(sz):
    mask = (torch.triu(torch.ones((sz, sz))) == 1).transpose(0, 1)
    mask = mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, float(0.0))
    return mask


def create_mask(src, tgt):
    src_seq_len = src.shape[0]
    tgt_seq_len = tgt.shape[0]
    tgt_mask = generate_square_subsequent_mask(tgt_seq_len)
    src_mask = torch.zeros((src_seq_len, src_seq_len)).type(torch.bool)
    src_padding_mask = (src == PAD_IDX).transpose(0, 1)
    tgt_padding_mask = (tgt == PAD_IDX).transpose(0, 1)
    return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask


def collate_fn(batch):
    src_batch, tgt_batch = [], []
    for src_sample, tgt_sample in batch:
        src_batch.append(torch.cat([torch.tensor([BOS_IDX]), src_sample, torch.tensor([EOS_IDX])]))
        tgt_batch.append(torch.cat([torch.tensor([BOS_IDX]), tgt_sample, torch.tensor([EOS_IDX])]))
    return pad_sequence(src_batch, padding_value=PAD_IDX), pad_sequence(tgt_batch, padding_value=PAD_IDX)


pairs = []
for _ in range(16):
    n = int(torch.randint(3, 8, (1,)))
    s = torch.randint(4, SRC_V, (n,))
    pairs.append((s, (s + 2) % TGT_V))
model = Seq2SeqTransformer()
for p in model.parameters():
    if p.dim() > 1:
        nn.init.xavier_uniform_(p)
loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD_IDX)
optimizer = torch.optim.Adam(model.parameters(), lr=0.0005, betas=(0.9, 0.98), eps=1e-9)
loader = torch.utils.data.DataLoader(pairs, batch_size=8, collate_fn=collate_fn)
for epoch in range(3):
    model.train()
    for src, tgt in loader:
        tgt_input = tgt[:-1, :]
        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)
        logits = model(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask)
        optimizer.zero_grad()
        tgt_out = tgt[1:, :]
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()
        optimizer.step()
    print("translation epoch", epoch, round(loss.item(), 4))


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    ys = torch.ones(1, 1).fill_(start_symbol).type(torch.long)
    for i in range(max_len - 1):
        tgt_mask = generate_square_subsequent_mask(ys.size(0)).type(torch.bool)
        out = model.decode(ys, memory, tgt_mask)
        out = out.transpose(0, 1)
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.item()
        ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
        if next_word == EOS_IDX:
            break
    return ys


model.eval()
src = torch.cat([torch.tensor([BOS_IDX]), pairs[0][0], torch.tensor([EOS_IDX])]).view(-1, 1)
num_tokens = src.shape[0]
print(
    "decoded",
    greedy_decode(model, src, torch.zeros(num_tokens, num_tokens).type(torch.bool), num_tokens + 5, BOS_IDX)
    .flatten()
    .tolist(),
)


def nt_xent(z1, z2, temperature=0.5):
    z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
    n = z1.shape[0]
    sim = torch.mm(z, z.t()) / temperature
    sim.fill_diagonal_(float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, targets)


enc = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 16))
opt = torch.optim.SGD(enc.parameters(), lr=0.1)
xb = torch.randn(16, 10)
for _ in range(3):
    loss = nt_xent(enc(xb + 0.1 * torch.randn_like(xb)), enc(xb + 0.1 * torch.randn_like(xb)))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("simclr", round(loss.item(), 4))

ctc_model = nn.LSTM(13, 32, bidirectional=True)
proj = nn.Linear(64, 6)
T, B = 20, 3
feats = torch.randn(T, B, 13)
targets = torch.randint(1, 6, (B, 5), dtype=torch.long)
input_lengths = torch.full((B,), T, dtype=torch.long)
target_lengths = torch.randint(2, 6, (B,), dtype=torch.long)
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
opt = torch.optim.Adam(list(ctc_model.parameters()) + list(proj.parameters()), lr=1e-2)
for _ in range(3):
    out, _ = ctc_model(feats)
    log_probs = proj(out).log_softmax(2)
    loss = ctc(log_probs, targets, input_lengths, target_lengths)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("ctc", round(loss.item(), 4))
best = log_probs.argmax(-1).t()
print("greedy ctc", [torch.unique_consecutive(b)[torch.unique_consecutive(b) != 0].tolist() for b in best][:1])

rnn = nn.GRU(10, 24, batch_first=True)
head = nn.Linear(24, 10)
h = None
inp = torch.zeros(1, 1, 10)
inp[0, 0, 3] = 1
chars = []
with torch.no_grad():
    for _ in range(12):
        out, h = rnn(inp, h)
        output_dist = head(out.squeeze()).div(0.8).exp()
        top_i = torch.multinomial(output_dist, 1)[0]
        chars.append(int(top_i))
        inp = F.one_hot(top_i.view(1, 1), 10).float()
print("sampled", chars)

clf = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
data = torch.rand(4, 1, 8, 8)
target = torch.randint(0, 10, (4,))
data.requires_grad = True
output = clf(data)
loss = F.nll_loss(F.log_softmax(output, dim=1), target)
clf.zero_grad()
loss.backward()
data_grad = data.grad.data
perturbed = torch.clamp(data + 0.1 * data_grad.sign(), 0, 1)
print("fgsm", round(float((perturbed - data).abs().max()), 4))


def train(rank, model, steps):
    torch.manual_seed(1 + rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        x = torch.randn(8, 5)
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    shared = nn.Linear(5, 1)
    shared.share_memory()
    before = shared.weight.detach().clone()
    processes = []
    for rank in range(2):
        p = mp.Process(target=train, args=(rank, shared, 20))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
    assert all(p.exitcode == 0 for p in processes)
    print("hogwild moved", bool((shared.weight.detach() != before).any()))
