"""An MLP on scikit-learn's 8x8 digits with ember.nn and ember.optim: the hand-written training loop."""

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.data import DataLoader, digits
from ember.optim import Adam

ember.manual_seed(0)
train = DataLoader(digits(train=True, images=False), batch_size=32, shuffle=True, seed=0)
valid = DataLoader(digits(train=False, images=False), batch_size=256)

model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = Adam(model.parameters(), lr=2e-3)

for epoch in range(1, 21):
    model.train()
    for x, y in train:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with ember.no_grad():
        correct = sum(int((model(x).argmax(1) == y).sum().item()) for x, y in valid)
    if epoch % 5 == 0:
        print(f"epoch {epoch:2d}  last loss {loss.item():.4f}  valid accuracy {correct / len(valid.dataset):.2%}")

model.save("mlp-digits.mpk")  # parameters only; nn.Sequential(...).load("mlp-digits.mpk") restores them
