import torch, torch.nn as nn, torch.nn.functional as F
from torch.distributions import Normal, Categorical
from torch.nn.utils.rnn import pad_sequence, pack_padded_sequence, pad_packed_sequence
from torch.utils.data import DataLoader

torch.manual_seed(0)


# the text classification tutorial: EmbeddingBag with offsets, a collate_batch, SGD with StepLR and grad clipping
class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        return self.fc(self.embedding(text, offsets))


data = [
    (int(torch.randint(0, 4, ()).item()), torch.randint(0, 50, (int(torch.randint(3, 9, ()).item()),)).tolist())
    for _ in range(64)
]


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for _label, _text in batch:
        label_list.append(_label)
        processed_text = torch.tensor(_text, dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list, text_list, offsets


dl = DataLoader(data, batch_size=8, shuffle=True, collate_fn=collate_batch)
model = TextClassificationModel(50, 16, 4)
criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=5)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
for epoch in range(2):
    total_acc, total_count = 0, 0
    for idx, (label, text, offsets) in enumerate(dl):
        optimizer.zero_grad()
        predicted_label = model(text, offsets)
        loss = criterion(predicted_label, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        total_acc += (predicted_label.argmax(1) == label).sum().item()
        total_count += label.size(0)
    scheduler.step()
print("text acc", total_acc / total_count)


# PPO-style actor-critic with a Gaussian policy
class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.actor = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 2))
        self.critic = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 1))
        self.log_std = nn.Parameter(torch.zeros(2))

    def dist(self, s):
        return Normal(self.actor(s), self.log_std.exp().expand(s.shape[0], 2))


ac = ActorCritic()
opt = torch.optim.Adam(ac.parameters(), lr=3e-4, eps=1e-5)
states = torch.randn(64, 4)
with torch.no_grad():
    d = ac.dist(states)
    actions = d.sample()
    old_logp = d.log_prob(actions).sum(-1)
    values = ac.critic(states).squeeze(-1)
returns = torch.randn(64)
adv = returns - values
adv = (adv - adv.mean()) / (adv.std() + 1e-8)
for epoch in range(4):
    for idx in torch.randperm(64).split(16):
        d = ac.dist(states[idx])
        logp = d.log_prob(actions[idx]).sum(-1)
        entropy = d.entropy().sum(-1).mean()
        ratio = (logp - old_logp[idx]).exp()
        surr = torch.min(ratio * adv[idx], torch.clamp(ratio, 0.8, 1.2) * adv[idx])
        v = ac.critic(states[idx]).squeeze(-1)
        loss = -surr.mean() + 0.5 * F.mse_loss(v, returns[idx]) - 0.01 * entropy
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(ac.parameters(), 0.5)
        opt.step()
print("ppo", round(loss.item(), 4))
# a bidirectional LSTM tagger over padded, packed sequences
seqs = [torch.randint(1, 20, (n,)) for n in (5, 3, 7, 2)]
lengths = torch.tensor([len(s) for s in seqs])
padded = pad_sequence(seqs, batch_first=True, padding_value=0)
emb = nn.Embedding(20, 8, padding_idx=0)
lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True, dropout=0.1)
head = nn.Linear(32, 5)
packed = pack_padded_sequence(emb(padded), lengths, batch_first=True, enforce_sorted=False)
out, (h, c) = lstm(packed)
out, out_lengths = pad_packed_sequence(out, batch_first=True, total_length=padded.size(1))
tags = torch.randint(0, 5, padded.shape)
tags[padded == 0] = -100
loss = F.cross_entropy(head(out).reshape(-1, 5), tags.reshape(-1), ignore_index=-100)
loss.backward()
print("bilstm", tuple(out.shape), tuple(h.shape), out_lengths.tolist(), emb.weight.grad[0].abs().sum().item())
