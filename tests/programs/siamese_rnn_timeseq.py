# pytorch/examples' siamese network (pairs of images, BCELoss on a similarity head, StepLR), mnist_rnn
# (an LSTM over image rows, log_softmax + nll_loss, Adadelta) and time_sequence_prediction (two LSTMCells
# unrolled over a sine wave, LBFGS closure, future prediction), on small synthetic data.
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(1)
np.random.seed(1)
IMAGES = torch.rand(60, 1, 28, 28)
LABELS = torch.randint(0, 4, (60,))


class PairDataset(Dataset):
    """Pairs of images: target 1 when both share a label (as the example's APP_MATCHER)."""

    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.a = torch.randint(0, 60, (n,), generator=g)
        self.b = torch.randint(0, 60, (n,), generator=g)

    def __len__(self):
        return len(self.a)

    def __getitem__(self, i):
        a, b = self.a[i], self.b[i]
        return IMAGES[a], IMAGES[b], torch.tensor(float(LABELS[a] == LABELS[b]))


class SiameseNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((4, 4)),
        )
        self.fc = nn.Sequential(nn.Linear(16 * 4 * 4 * 2, 64), nn.ReLU(inplace=True), nn.Linear(64, 1))
        self.sigmoid = nn.Sigmoid()
        self.fc.apply(self.init_weights)

    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    def forward_once(self, x):
        return torch.flatten(self.features(x), 1)

    def forward(self, input1, input2):
        output = torch.cat((self.forward_once(input1), self.forward_once(input2)), 1)
        return self.sigmoid(self.fc(output))


model = SiameseNetwork()
optimizer = optim.Adadelta(model.parameters(), lr=1.0)
scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
criterion = nn.BCELoss()
loader = DataLoader(PairDataset(64), batch_size=16, shuffle=True)
for epoch in range(2):
    model.train()
    for images_1, images_2, targets in loader:
        optimizer.zero_grad()
        outputs = model(images_1, images_2).squeeze()
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
    scheduler.step()
model.eval()
correct = 0
with torch.no_grad():
    for images_1, images_2, targets in DataLoader(PairDataset(32), batch_size=16):
        outputs = model(images_1, images_2).squeeze()
        pred = torch.where(outputs > 0.5, 1, 0)
        correct += pred.eq(targets.view_as(pred)).sum().item()
print(f"siamese: loss {loss.item():.4f}, accuracy {correct}/32, lr {scheduler.get_last_lr()[0]:.3f}")
assert math.isfinite(loss.item())


class RNNNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(input_size=28, hidden_size=32, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(32)
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(32, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, input):
        input = input.reshape(-1, 28, 28)
        output, hidden = self.rnn(input)
        output = output[:, -1, :]
        output = self.batchnorm(output)
        output = self.dropout1(output)
        output = F.relu(self.fc1(output))
        output = self.dropout2(output)
        return F.log_softmax(self.fc2(output), dim=1)


rnn = RNNNet()
opt = optim.Adadelta(rnn.parameters(), lr=0.1)
for step in range(3):
    data, target = IMAGES[step * 20 : (step + 1) * 20], LABELS[step * 20 : (step + 1) * 20]
    opt.zero_grad()
    loss = F.nll_loss(rnn(data), target)
    loss.backward()
    opt.step()
rnn.eval()
with torch.no_grad():
    out = rnn(IMAGES)
    test_loss = F.nll_loss(out, LABELS, reduction="sum").item() / 60
    acc = out.argmax(dim=1, keepdim=True).eq(LABELS.view_as(out.argmax(dim=1, keepdim=True))).sum().item()
print(f"mnist_rnn: test loss {test_loss:.4f}, accuracy {acc}/60")


T, L, N = 20, 100, 12
x = np.empty((N, L), "int64")
x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
data = np.sin(x / 1.0 / T).astype("float64")


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, 16)
        self.lstm2 = nn.LSTMCell(16, 16)
        self.linear = nn.Linear(16, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 16, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 16, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 16, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 16, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


input = torch.from_numpy(data[3:, :-1])
target = torch.from_numpy(data[3:, 1:])
test_input = torch.from_numpy(data[:3, :-1])
test_target = torch.from_numpy(data[:3, 1:])
seq = Sequence()
seq.double()
criterion = nn.MSELoss()
optimizer = optim.LBFGS(seq.parameters(), lr=0.8)
losses = []
for i in range(3):

    def closure():
        optimizer.zero_grad()
        out = seq(input)
        loss = criterion(out, target)
        loss.backward()
        return loss

    optimizer.step(closure)
    with torch.no_grad():
        future = 20
        pred = seq(test_input, future=future)
        loss = criterion(pred[:, :-future], test_target)
        losses.append(loss.item())
        y = pred.detach().numpy()
print(f"time_sequence_prediction: test losses {[round(v, 5) for v in losses]}, prediction {y.shape}")
assert losses[-1] < losses[0] and y.shape == (3, 119)
