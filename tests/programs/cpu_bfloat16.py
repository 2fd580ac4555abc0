"""Mixed precision on the CPU as PyTorch users write it: torch.autocast("cpu") (bfloat16 by default) around the
forward and loss of a small CNN, backward outside it; then the model in bfloat16 with .to(torch.bfloat16) for
inference and a few plain bfloat16 training steps."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.ln = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
        x = F.max_pool2d(F.gelu(self.conv2(x)), 2)
        x = self.ln(F.relu(self.fc1(torch.flatten(x, 1))))
        return self.fc2(x)


def main():
    torch.manual_seed(0)
    x = torch.randn(64, 1, 16, 16)
    y = (x.mean((1, 2, 3)) > 0).long() + 2 * (x[:, 0, 0, 0] > 0).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = last = None
    for epoch in range(6):
        for xb, yb in loader:
            opt.zero_grad()
            with torch.autocast("cpu"):
                out = model(xb)
                assert out.dtype == torch.bfloat16, out.dtype  # linear runs in bfloat16
                loss = F.cross_entropy(out, yb)
                assert loss.dtype == torch.float32, loss.dtype  # losses run in float32
            loss.backward()
            assert model.fc1.weight.grad.dtype == torch.float32  # parameters and gradients stay float32
            opt.step()
            first = loss.item() if first is None else first
            last = loss.item()
    print(f"autocast: first loss {first:.4f}, last {last:.4f}")
    assert last < first

    model = model.to(torch.bfloat16).eval()
    with torch.no_grad():
        logits = model(x.to(torch.bfloat16))
    assert logits.dtype == torch.bfloat16 and model.fc2.weight.dtype == torch.bfloat16
    acc = (logits.float().argmax(1) == y).float().mean().item()
    print(f"bfloat16 inference accuracy {acc:.3f}")

    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xb, yb = x.bfloat16(), y
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        assert model.fc2.weight.grad.dtype == torch.bfloat16
        opt.step()
        losses.append(loss.float().item())
    print("bfloat16 training losses", " ".join(f"{v:.3f}" for v in losses))
    assert losses[-1] < losses[0]


if __name__ == "__main__":
    main()
